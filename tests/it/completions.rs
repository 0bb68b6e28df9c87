//! `stormsim completions bash|zsh|fish`: each shell's script is written,
//! names every subcommand `stormsim --help` lists and the options of `run`,
//! and (where bash is installed) actually completes in bash.

use std::process::Command;

fn stormsim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_stormsim"))
        .args(args)
        .output()
        .unwrap()
}

/// The subcommands `stormsim --help` lists (but `help`).
fn subcommands() -> Vec<String> {
    let help = String::from_utf8(stormsim(&["--help"]).stdout).unwrap();
    let list: Vec<String> = help
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|c| c != "help")
        .collect();
    assert!(list.len() >= 8, "{list:?}");
    list
}

fn script(shell: &str) -> String {
    let out = stormsim(&["completions", shell]);
    assert!(out.status.success(), "{shell}: {out:?}");
    assert!(out.stderr.is_empty(), "{shell}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn each_shell_gets_a_script_that_names_every_subcommand() {
    let commands = subcommands();
    assert!(commands.iter().any(|c| c == "completions"));
    for (shell, marker) in [
        ("bash", "complete -F _stormsim"),
        ("zsh", "#compdef stormsim"),
        ("fish", "complete -c stormsim"),
    ] {
        let text = script(shell);
        assert!(text.contains(marker), "{shell}: no `{marker}`");
        for c in &commands {
            assert!(text.contains(c.as_str()), "{shell}: no subcommand {c}");
        }
        for option in ["--set", "--shard-from-env", "--replicates", "--force"] {
            let name = option.trim_start_matches('-');
            assert!(text.contains(name), "{shell}: no option {option}");
        }
    }
}

#[test]
fn an_unknown_shell_is_bad_input() {
    let out = stormsim(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("bash, zsh, fish"), "{err}");
}

/// Loads the bash script into bash and asks it, as a shell would on Tab,
/// for the words after `stormsim ` and after `stormsim run --sh`.
#[test]
fn the_bash_script_completes_subcommands_and_options() {
    if Command::new("bash").arg("--version").output().is_err() {
        eprintln!("bash not installed: skipped");
        return;
    }
    let complete = |words: &[&str]| -> Vec<String> {
        let program = format!(
            "{}\nCOMP_WORDS=({}); COMP_CWORD={}; _stormsim stormsim '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script("bash"),
            words
                .iter()
                .map(|w| format!("'{w}'"))
                .collect::<Vec<_>>()
                .join(" "),
            words.len() - 1,
            words[words.len() - 1],
            words[words.len() - 2],
        );
        let out = Command::new("bash")
            .arg("-c")
            .arg(program)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    };
    let top = complete(&["stormsim", ""]);
    for c in subcommands() {
        assert!(top.contains(&c), "`stormsim <Tab>` offers {top:?}, not {c}");
    }
    let shard = complete(&["stormsim", "run", "--sh"]);
    assert_eq!(shard, ["--shard", "--shard-from-env", "--shard-count"]);
}
