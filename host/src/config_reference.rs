//! The configuration reference (`docs/configuration.md`), generated from the same clap
//! definitions `--help` prints, so the page cannot drift from the binary: a unit test compares
//! the checked-in page with [`markdown`] and fails on any difference
//! (`UPDATE_DOCS=1 cargo test -p fluss-lake-host --lib config_reference` rewrites it).
//!
//! A module of its own, above `config` and `plugin`: it reads their command-line definitions
//! and nothing reads it.

use std::fmt::Write as _;

use clap::{Arg, ArgAction, Command, CommandFactory};

use crate::config::Cli;
use crate::plugin::inspect::InspectCli;
use crate::plugin::list::ListCli;

/// What the page says before the generated tables.
const INTRO: &str = "\
# Configuration

<!-- Generated from the host's command-line definitions (host/src/config_reference.rs); do not
edit by hand. `UPDATE_DOCS=1 cargo test -p fluss-lake-host --lib config_reference` rewrites it. -->

Every option is a command-line option of `fluss-lake-host`, and the same option can be given in a
TOML file with `--config FILE`: the key is the long option without `--` (dotted keys, quoted keys
or tables; a list for a repeatable option; `true` for a flag), and the command line wins over the
file. `--print-config` prints the effective configuration (defaults, file and command line, secrets
masked) as such a file. Durations are written `500ms`, `30s`, `10min`, `1h`; sizes `64kb`, `256mb`,
`2gb`. [Operations](operations.md) shows a complete file.
";

/// The page: the host's options, the open-ended option families, then the `plugins`
/// subcommands.
fn markdown() -> String {
    let mut page = String::from(INTRO);
    let host = Cli::command();
    section(&mut page, "Options", &host);
    if let Some(open) = host
        .get_long_about()
        .map(ToString::to_string)
        .and_then(|about| {
            about
                .split_once("Open-ended options (not listed below):")
                .map(|(_, rest)| rest.to_string())
        })
    {
        page.push_str("\n## Open-ended options\n\n");
        page.push_str(
            "Option families whose keys are passed on rather than checked by the host:\n\n",
        );
        page.push_str("| option | what |\n|---|---|\n");
        for line in open.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (option, what) = line.split_once("  ").unwrap_or((line, ""));
            let _ = writeln!(page, "| `{}` | {} |", option.trim(), cell(what.trim()));
        }
    }
    for command in [InspectCli::command(), ListCli::command()] {
        let title = format!("`{}`", command.get_name());
        section(&mut page, &title, &command);
    }
    page
}

/// One table of a command's options (and positional arguments), in definition order.
fn section(page: &mut String, title: &str, command: &Command) {
    let _ = writeln!(page, "\n## {title}\n");
    if let Some(about) = command.get_about() {
        let _ = writeln!(page, "{}\n", about.to_string().trim());
    }
    page.push_str("| option | default | description |\n|---|---|---|\n");
    for arg in command.get_arguments().filter(|a| listed(a)) {
        let _ = writeln!(
            page,
            "| {} | {} | {} |",
            usage(arg),
            default(arg),
            cell(&help(arg))
        );
    }
}

/// `--help` and `--version` are clap's own; hidden options are not for users.
fn listed(arg: &Arg) -> bool {
    !arg.is_hide_set() && !matches!(arg.get_id().as_str(), "help" | "version")
}

/// `--name <VALUE>`, with `…` for a repeatable option and the accepted values of an
/// enumeration; a positional argument as `<NAME>`.
fn usage(arg: &Arg) -> String {
    let values: Vec<String> = arg
        .get_value_names()
        .filter(|_| arg.get_action().takes_values())
        .map(|names| names.iter().map(|n| format!("<{n}>")).collect())
        .unwrap_or_default();
    let mut text = match arg.get_long() {
        Some(long) if values.is_empty() => format!("`--{long}`"),
        Some(long) => format!("`--{long} {}`", values.join(" ")),
        None if values.is_empty() => format!("`<{}>`", arg.get_id().as_str().to_uppercase()),
        None => format!("`{}`", values.join(" ")),
    };
    if matches!(arg.get_action(), ArgAction::Append) {
        text.push_str(" (repeatable)");
    }
    let accepted: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if !accepted.is_empty() && !matches!(arg.get_action(), ArgAction::SetTrue) {
        let _ = write!(text, ": {}", accepted.join(", "));
    }
    text
}

/// The default clap applies, or "required"; none when the description explains the default
/// itself (`default: …`), as for defaults that depend on the machine.
fn default(arg: &Arg) -> String {
    if arg.is_required_set() {
        return "required".into();
    }
    let help = help(arg);
    if help.contains("default:") || help.contains("Default:") {
        return String::new();
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .filter(|v| !(matches!(arg.get_action(), ArgAction::SetTrue) && v == "false"))
        .map(|v| format!("`{v}`"))
        .collect();
    defaults.join(", ")
}

/// The long help when there is one (doc comments with several paragraphs), else the short.
fn help(arg: &Arg) -> String {
    arg.get_long_help()
        .or_else(|| arg.get_help())
        .map(ToString::to_string)
        .unwrap_or_default()
}

/// Text for one table cell: paragraphs kept as `<br><br>`, lines joined, `|` escaped, and `<`
/// and `>` outside code spans written as entities (`/tmp/perf-<pid>.map` is not an HTML tag).
fn cell(text: &str) -> String {
    let joined = text
        .trim()
        .split("\n\n")
        .map(|paragraph| {
            paragraph
                .lines()
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n\n");
    joined
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                part.to_string()
            } else {
                part.replace('<', "&lt;")
                    .replace('>', "&gt;")
                    .replace("\n\n", "<br><br>")
            }
        })
        .collect::<Vec<_>>()
        .join("`")
        .replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page_path() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.md")
    }

    #[test]
    fn the_configuration_page_is_generated_from_the_options() {
        let generated = markdown();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(page_path(), &generated).unwrap();
        }
        let checked_in = std::fs::read_to_string(page_path()).unwrap_or_default();
        assert!(
            checked_in == generated,
            "docs/configuration.md differs from the options' definitions; regenerate it with \
             UPDATE_DOCS=1 cargo test -p fluss-lake-host --lib config_reference"
        );
    }

    #[test]
    fn every_listed_option_is_on_the_page() {
        let page = markdown();
        for command in [Cli::command(), InspectCli::command(), ListCli::command()] {
            for arg in command.get_arguments().filter(|a| listed(a)) {
                if let Some(long) = arg.get_long() {
                    assert!(page.contains(&format!("`--{long}")), "--{long} missing");
                }
            }
        }
        assert!(
            page.contains("`--datalake.<format>.<key> <value>`"),
            "{page}"
        );
    }

    #[test]
    fn cells_keep_paragraphs_and_escape_pipes() {
        assert_eq!(cell("a\nb\n\nc | d"), "a b<br><br>c \\| d");
        assert_eq!(cell("/tmp/x-<pid> `<N>`"), "/tmp/x-&lt;pid&gt; `<N>`");
    }
}
