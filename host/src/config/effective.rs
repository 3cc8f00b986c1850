//! `--print-config`: the configuration the host would run with, as a TOML file that
//! `--config` reads back, each option with where its value came from (default, the config
//! file, the command line), secrets masked.

use std::path::Path;

use clap::ArgMatches;
use clap::parser::ValueSource;
use toml::Value;

use super::file::option_key;
use super::is_secret;

/// Options that say what to do, not how to run.
const NOT_SHOWN: &[&str] = &["config", "print-config", "help", "version"];

const MASK: &str = "******";

/// Renders every option that has a value. `prefixed` are the open-ended options
/// (`datalake.*`, `lake.tiering.*`, `fluss.*`), `file_args` the arguments the config file
/// contributed (after the command line's overrides were taken out).
pub fn render(
    command: &clap::Command,
    matches: &ArgMatches,
    prefixed: &[(String, String)],
    file_args: &[String],
    file: Option<&Path>,
) -> String {
    let from_file = |key: &str| {
        file_args
            .iter()
            .any(|a| option_key(a).is_some_and(|k| k == key))
    };
    let source = |key: &str, default: bool| -> String {
        if default {
            "default".to_string()
        } else if from_file(key) {
            match file {
                Some(f) => format!("from {}", f.display()),
                None => "from the config file".to_string(),
            }
        } else {
            "from the command line".to_string()
        }
    };
    let mut out = String::from(
        "# The effective configuration of fluss-lake-host (--print-config); secrets masked.\n\
         # Give it back with --config FILE.\n",
    );
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        let id = arg.get_id().as_str();
        if NOT_SHOWN.contains(&long) {
            continue;
        }
        let Some(raw) = matches.get_raw(id) else {
            continue;
        };
        let values: Vec<String> = raw.map(|v| v.to_string_lossy().into_owned()).collect();
        if values.is_empty() {
            continue;
        }
        let default = matches.value_source(id) == Some(ValueSource::DefaultValue);
        let value = if !arg.get_action().takes_values() {
            Value::Boolean(values.last().is_some_and(|v| v == "true"))
        } else if matches!(arg.get_action(), clap::ArgAction::Append) {
            Value::Array(values.iter().map(|v| shown(long, v)).collect())
        } else {
            shown(long, values.last().map_or("", String::as_str))
        };
        out.push_str(&line(long, &value, &source(long, default)));
    }
    for (key, value) in prefixed {
        out.push_str(&line(key, &shown(key, value), &source(key, false)));
    }
    out
}

fn shown(key: &str, value: &str) -> Value {
    Value::String(if is_secret(key) {
        MASK.to_string()
    } else {
        value.to_string()
    })
}

fn line(key: &str, value: &Value, source: &str) -> String {
    format!("{} = {value}  # {source}\n", Value::String(key.to_string()))
}
