//! linkperf's configuration files: where they are (the user's file under
//! `$XDG_CONFIG_HOME`, else `~/.config`, over the system's
//! `/etc/linkperf/config.toml`), what each key says and on which line, and
//! which file's value wins. What the keys mean is the caller's: it checks
//! every entry ([`Config::check`]) and turns the winners into its defaults.
//!
//! A file holds top-level keys (`port = 5300`) and one level of sections
//! (`[server]`); a value is a boolean, a number, a string or an array of them.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where a value was written: a file and a line (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub path: PathBuf,
    pub line: usize,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.path.display(), self.line)
    }
}

/// A value as written; numbers are kept as their text (`5300`, `2.5`), for
/// the caller parses them as it parses the same option on a command line.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    /// An integer or a float, as written.
    Number(String),
    Text(String),
    List(Vec<String>),
}

impl fmt::Display for Value {
    /// The value in TOML: `true`, `"text"`, `["a", "b"]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Number(n) => write!(f, "{n}"),
            Value::Text(t) => write!(f, "{t:?}"),
            Value::List(items) => {
                let quoted: Vec<String> = items.iter().map(|i| format!("{i:?}")).collect();
                write!(f, "[{}]", quoted.join(", "))
            }
        }
    }
}

/// One key of one file.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The section (`server` for `[server]`), none for a top-level key.
    pub section: Option<String>,
    pub key: String,
    pub value: Value,
    pub source: Source,
}

impl Entry {
    /// `server.port`, or `port` at the top level.
    pub fn name(&self) -> String {
        match &self.section {
            Some(s) => format!("{s}.{}", self.key),
            None => self.key.clone(),
        }
    }
}

/// What is wrong with a configuration file, on one line: file, line, key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub path: PathBuf,
    pub line: usize,
    /// The key as `section.key`; empty when the file does not parse at all.
    pub key: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = format!("{}:{}", self.path.display(), self.line);
        if self.key.is_empty() {
            write!(f, "{at}: {}", self.message)
        } else {
            write!(f, "{at}: key '{}': {}", self.key, self.message)
        }
    }
}

/// The files read, strongest first.
#[derive(Debug, Clone)]
pub struct Files {
    /// `$XDG_CONFIG_HOME/linkperf/config.toml`, else `$HOME/.config/...`.
    pub user: Option<PathBuf>,
    /// `/etc/linkperf/config.toml` (`$LINKPERF_SYSTEM_CONFIG` names another
    /// file, for packagers and tests).
    pub system: PathBuf,
}

impl Files {
    /// The files this process reads, from its environment.
    pub fn from_env() -> Files {
        let nonempty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let user = nonempty("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| nonempty("HOME").map(|h| PathBuf::from(h).join(".config")))
            .map(|dir| dir.join("linkperf").join("config.toml"));
        let system = nonempty("LINKPERF_SYSTEM_CONFIG")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/etc/linkperf/config.toml"));
        Files { user, system }
    }

    /// Every file, strongest first.
    pub fn all(&self) -> Vec<&Path> {
        self.user
            .iter()
            .map(PathBuf::as_path)
            .chain(std::iter::once(self.system.as_path()))
            .collect()
    }
}

/// The entries of the files that exist, strongest file first.
#[derive(Debug, Clone, Default)]
pub struct Config {
    files: Vec<(PathBuf, Vec<Entry>)>,
}

impl Config {
    /// Reads every file of `files` that exists; a missing file is no error,
    /// one that cannot be read or parsed is.
    pub fn load(files: &Files) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        for path in files.all() {
            let text = match std::fs::read_to_string(path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(error(path, 1, "", format!("cannot read it: {e}"))),
            };
            let entries = parse(path, &text)?;
            config.files.push((path.to_path_buf(), entries));
        }
        Ok(config)
    }

    /// The files that were read, strongest first.
    pub fn files_read(&self) -> impl Iterator<Item = &Path> {
        self.files.iter().map(|(p, _)| p.as_path())
    }

    /// Every entry, strongest file first, in file order.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.files.iter().flat_map(|(_, e)| e.iter())
    }

    /// The winning value of `key` for a command: the user's `[section] key`,
    /// then (with `top_level`) the user's top-level `key`, then the same in
    /// the system file.
    pub fn lookup(&self, section: Option<&str>, key: &str, top_level: bool) -> Option<&Entry> {
        self.files.iter().find_map(|(_, entries)| {
            let find = |s: Option<&str>| {
                entries
                    .iter()
                    .find(|e| e.section.as_deref() == s && e.key == key)
            };
            section
                .and_then(|s| find(Some(s)))
                .or_else(|| top_level.then(|| find(None)).flatten())
        })
    }

    /// Checks every entry with `check` (the caller knows the keys and their
    /// values); the first refusal becomes the error, with file and line.
    pub fn check(
        &self,
        mut check: impl FnMut(&Entry) -> Result<(), String>,
    ) -> Result<(), ConfigError> {
        for entry in self.entries() {
            check(entry).map_err(|message| ConfigError {
                path: entry.source.path.clone(),
                line: entry.source.line,
                key: entry.name(),
                message,
            })?;
        }
        Ok(())
    }
}

fn error(path: &Path, line: usize, key: &str, message: String) -> ConfigError {
    ConfigError {
        path: path.to_path_buf(),
        line,
        key: key.to_string(),
        message,
    }
}

fn line_of(text: &str, offset: Option<std::ops::Range<usize>>) -> usize {
    let at = offset.map(|r| r.start).unwrap_or(0).min(text.len());
    text[..at].matches('\n').count() + 1
}

/// The entries of one file's text, in file order.
pub fn parse(path: &Path, text: &str) -> Result<Vec<Entry>, ConfigError> {
    let doc = toml_edit::ImDocument::parse(text).map_err(|e| {
        let first = e.message().lines().next().unwrap_or("not TOML").to_string();
        error(
            path,
            line_of(text, e.span()),
            "",
            format!("not valid TOML: {first}"),
        )
    })?;
    let mut entries = Vec::new();
    for (key, item) in doc.as_table().iter() {
        let (k, _) = doc.as_table().get_key_value(key).expect("key listed");
        let line = line_of(text, k.span().or_else(|| item.span()));
        match item {
            toml_edit::Item::Table(table) => {
                for (sub, subitem) in table.iter() {
                    let (sk, _) = table.get_key_value(sub).expect("key listed");
                    let line = line_of(text, sk.span().or_else(|| subitem.span()));
                    let name = format!("{key}.{sub}");
                    let value = value_of(subitem).map_err(|m| error(path, line, &name, m))?;
                    entries.push(Entry {
                        section: Some(key.to_string()),
                        key: sub.to_string(),
                        value,
                        source: Source {
                            path: path.to_path_buf(),
                            line,
                        },
                    });
                }
            }
            _ => {
                let value = value_of(item).map_err(|m| error(path, line, key, m))?;
                entries.push(Entry {
                    section: None,
                    key: key.to_string(),
                    value,
                    source: Source {
                        path: path.to_path_buf(),
                        line,
                    },
                });
            }
        }
    }
    Ok(entries)
}

fn value_of(item: &toml_edit::Item) -> Result<Value, String> {
    use toml_edit::Value as V;
    let scalar = |v: &V| -> Result<String, String> {
        match v {
            V::String(s) => Ok(s.value().clone()),
            V::Integer(i) => Ok(i.value().to_string()),
            V::Float(f) => Ok(f.value().to_string()),
            _ => Err("expected a boolean, a number, a string or an array of them".into()),
        }
    };
    match item {
        toml_edit::Item::Value(V::Boolean(b)) => Ok(Value::Bool(*b.value())),
        toml_edit::Item::Value(V::Array(a)) => a
            .iter()
            .map(scalar)
            .collect::<Result<_, _>>()
            .map(Value::List),
        toml_edit::Item::Value(v @ (V::Integer(_) | V::Float(_))) => scalar(v).map(Value::Number),
        toml_edit::Item::Value(v) => scalar(v).map(Value::Text),
        toml_edit::Item::Table(_) => {
            Err("sections hold keys, not further sections (one level: [server])".into())
        }
        _ => Err("expected a boolean, a number, a string or an array of them".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_carry_their_line_and_nested_sections_are_refused_on_theirs() {
        let text = "port = 5300\n\n[server]\n# a comment\nexclusive = true\nvary = [\"a\", 2]\n";
        let entries = parse(Path::new("c.toml"), text).unwrap();
        let got: Vec<(String, usize, Value)> = entries
            .iter()
            .map(|e| (e.name(), e.source.line, e.value.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("port".into(), 1, Value::Number("5300".into())),
                ("server.exclusive".into(), 5, Value::Bool(true)),
                (
                    "server.vary".into(),
                    6,
                    Value::List(vec!["a".into(), "2".into()])
                ),
            ]
        );
        let err = parse(Path::new("c.toml"), "[a]\nx = 1\n[a.b]\ny = 2\n").unwrap_err();
        assert_eq!((err.line, err.key.as_str()), (3, "a.b"), "{err}");
        let err = parse(Path::new("c.toml"), "port = 1\nport = = 2\n").unwrap_err();
        assert_eq!(err.line, 2, "{err}");
    }
}
