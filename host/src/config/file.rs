//! `--config FILE`: the command line's options in a TOML file.
//!
//! Keys are the long options without `--`, the Fluss way (`fluss.bootstrap.servers`,
//! `datalake.paimon.warehouse`, `lake.tiering.auto-compaction`), written as dotted keys,
//! quoted keys or tables; a list gives a repeatable option several times; `true` turns a flag
//! on. The file becomes command-line arguments placed before the real ones, so clap checks
//! both the same way and the command line wins: a single-valued option given on the command
//! line replaces the file's, and a repeatable one given there replaces the file's list.

use std::path::Path;

use toml::Value;

/// Options that are not configuration: they say what to do with it.
const NOT_IN_FILE: &[&str] = &["config", "print-config", "help", "version"];

/// The file's options as command-line arguments.
///
/// `known` are the long options the host knows (without `--`; the Fluss client options
/// included) and `flags` those that take no value; keys under `datalake.<format>.`,
/// `lake.tiering.` and `fluss.client.fs.` are open-ended, as on the command line, and
/// `fluss.tiering.*` is Flink's spelling of `tiering.*`. Errors are one line naming the file and the key.
pub fn to_args(path: &Path, known: &[String], flags: &[String]) -> Result<Vec<String>, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: cannot read: {e}"))?;
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        // toml's message spans several lines (the line quoted, a caret): keep the first and
        // say where.
        let line = e
            .span()
            .map(|s| text[..s.start].matches('\n').count() + 1)
            .map(|l| format!(" (line {l})"))
            .unwrap_or_default();
        format!(
            "{shown}: not valid TOML{line}: {}",
            e.message().lines().next().unwrap_or("")
        )
    })?;
    let mut pairs = Vec::new();
    flatten("", &Value::Table(table), &mut pairs);
    let mut args = Vec::new();
    for (key, value) in pairs {
        let open = (key.starts_with("datalake.") && key.matches('.').count() >= 2)
            || key.starts_with("lake.tiering.")
            || key.starts_with("fluss.client.fs.");
        if NOT_IN_FILE.contains(&key.as_str()) || !(open || known.contains(&canonical(&key))) {
            return Err(format!(
                "{shown}: unknown key '{key}' (keys are the command line's long options without '--'; see --help)"
            ));
        }
        let values = match value {
            Value::Array(items) => items,
            other => vec![other],
        };
        let is_flag = flags.contains(&key);
        for v in values {
            match (&v, is_flag) {
                (Value::Boolean(true), true) => args.push(format!("--{key}")),
                (Value::Boolean(false), true) => {}
                (_, true) => {
                    return Err(format!(
                        "{shown}: key '{key}' is a flag: write {key} = true or false"
                    ));
                }
                (Value::Table(_) | Value::Array(_), false) => {
                    return Err(format!(
                        "{shown}: key '{key}' takes a value or a list of values"
                    ));
                }
                (Value::String(s), false) => args.push(format!("--{key}={s}")),
                (other, false) => args.push(format!("--{key}={other}")),
            }
        }
    }
    Ok(args)
}

/// `a = { b = { c = 1 } }` and `"a.b.c" = 1` both give `("a.b.c", 1)`; lists stay values.
fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Table(t) => {
            for (k, v) in t {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        other => out.push((prefix.to_string(), other.clone())),
    }
}

/// Drops from `file_args` every option `cli_args` gives too, so a repeatable option on the
/// command line replaces the file's list (single-valued ones would win anyway, as the later
/// occurrence).
pub fn without_overridden(file_args: Vec<String>, cli_args: &[String]) -> Vec<String> {
    let on_cli: Vec<String> = cli_args.iter().filter_map(|a| option_key(a)).collect();
    file_args
        .into_iter()
        .filter(|a| option_key(a).is_none_or(|k| !on_cli.contains(&k)))
        .collect()
}

/// The option an argument (`--key` or `--key=value`) sets, by its canonical name; none for a
/// value.
pub fn option_key(arg: &str) -> Option<String> {
    let body = arg.strip_prefix("--")?;
    Some(canonical(body.split_once('=').map_or(body, |(k, _)| k)))
}

/// `fluss.tiering.*` is Flink's spelling of the host's `tiering.*`.
fn canonical(key: &str) -> String {
    key.strip_prefix("fluss.tiering.")
        .map_or_else(|| key.to_string(), |t| format!("tiering.{t}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::ConfigFile;

    fn write(text: &str) -> ConfigFile {
        ConfigFile::new("file", text)
    }

    fn known() -> (Vec<String>, Vec<String>) {
        (
            [
                "fluss.bootstrap.servers",
                "fluss.client.connect-timeout",
                "plugin",
                "route",
                "no-plugin-cache",
                "datalake.format",
            ]
            .map(String::from)
            .to_vec(),
            vec!["no-plugin-cache".to_string()],
        )
    }

    #[test]
    fn dotted_keys_tables_lists_and_flags_become_arguments() {
        let f = write(
            r#"
            # as in Fluss's server.yaml, but TOML
            fluss.bootstrap.servers = "h:9123"
            plugin = ["/p/a.wasm", "/p/b.wasm#sha256=00"]
            no-plugin-cache = true
            "lake.tiering.auto-compaction" = true
            [datalake.paimon]
            warehouse = "/wh"
            "s3.secret-key" = "x"
            [fluss.client]
            connect-timeout = "5s"
            "#,
        );
        let (k, flags) = known();
        let args = to_args(&f.0, &k, &flags).unwrap();
        assert_eq!(
            args,
            [
                "--datalake.paimon.s3.secret-key=x",
                "--datalake.paimon.warehouse=/wh",
                "--fluss.bootstrap.servers=h:9123",
                "--fluss.client.connect-timeout=5s",
                "--lake.tiering.auto-compaction=true",
                "--no-plugin-cache",
                "--plugin=/p/a.wasm",
                "--plugin=/p/b.wasm#sha256=00",
            ]
        );
    }

    #[test]
    fn a_bad_key_or_file_is_one_line_naming_the_file_and_the_key() {
        let (k, flags) = known();
        let f = write("fluss.bootstap.servers = \"h:1\"\n");
        let e = to_args(&f.0, &k, &flags).unwrap_err();
        assert!(
            e.starts_with(&format!(
                "{}: unknown key 'fluss.bootstap.servers'",
                f.0.display()
            )),
            "{e}"
        );
        let f = write("plugn = \"a.wasm\"\n");
        let e = to_args(&f.0, &k, &flags).unwrap_err();
        assert!(
            e.contains(&f.0.display().to_string()) && e.contains("unknown key 'plugn'"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        let f = write("plugin = \n");
        let e = to_args(&f.0, &k, &flags).unwrap_err();
        assert!(e.contains("not valid TOML (line 1)"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let f = write("no-plugin-cache = \"yes\"\n");
        assert!(to_args(&f.0, &k, &flags).unwrap_err().contains("is a flag"));
        let f = write("config = \"other.toml\"\n");
        assert!(
            to_args(&f.0, &k, &flags)
                .unwrap_err()
                .contains("unknown key 'config'")
        );
        let e = to_args(Path::new("/nonexistent/x.toml"), &k, &flags).unwrap_err();
        assert!(e.starts_with("/nonexistent/x.toml: cannot read"), "{e}");
    }

    #[test]
    fn the_command_line_replaces_the_files_repeatable_options() {
        let file = [
            "--plugin=/a.wasm",
            "--plugin=/b.wasm",
            "--route=x.*=delta",
            "--tiering.poll.timeout=1s",
        ]
        .map(String::from)
        .to_vec();
        let cli = ["--plugin", "/c.wasm", "--fluss.tiering.poll.timeout", "2s"]
            .map(String::from)
            .to_vec();
        assert_eq!(without_overridden(file, &cli), ["--route=x.*=delta"]);
    }
}
