/// A failed allocation ends the command with a message and exit 1, not an
/// abort (see `out_of_memory`).
#[cfg(unix)]
#[global_allocator]
static ALLOCATOR: stormsim::out_of_memory::ExitOnFailure = stormsim::out_of_memory::ExitOnFailure;

fn main() {
    #[cfg(unix)]
    stormsim::out_of_memory::keep_a_reserve();
    std::process::exit(stormsim::cli::main());
}
