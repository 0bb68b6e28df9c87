fn main() {
    std::process::exit(stormsim::cli::main());
}
