//! The topology file: hosts, switches and links, parsed with every error tied to its file,
//! key and line, then resolved (presets merged, addresses assigned, shape checked).
//!
//! `model` holds the resolved types; `raw` the file's serde shape, `parse` the checks
//! and conversions, `addresses` the address plan, `changes` schedules and `testbed set`
//! arguments (changes to running links, checked the same way), `cells` the ATM cell keys,
//! `send_cost` a host's send cost.

mod addresses;
mod cells;
mod changes;
mod model;
mod parse;
mod paths;
mod raw;
mod send_cost;
#[cfg(test)]
mod tests;

use crate::error::TestbedError;
pub use changes::{parse_set_args, resolve_link, schedule_from_file};
pub use model::{
    validate_name, CpuIdle, Host, HostInterface, Link, Router, RouterInterface, SendCost, Switch,
    Topology, DEFAULT_SUBNET, DEFAULT_SUBNET6, MAX_MTU, MAX_NAME_LEN, MIN_MTU,
};
use parse::Parser;
pub use paths::{path_to, Hop};
use std::path::Path;

impl Topology {
    /// Parses topology text. `name` is the testbed name unless the text has a `name` key.
    pub fn from_toml_str(name: &str, text: &str) -> Result<Self, TestbedError> {
        Parser::file(format!("topology '{name}'"), text, None).parse(name)
    }

    /// Reads a topology file; the testbed is named by its `name` key or the file stem.
    pub fn from_file(path: &Path) -> Result<Self, TestbedError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            TestbedError::bad(format!("cannot read topology file {}: {e}", path.display()))
        })?;
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("testbed");
        let dir = path.parent().map(Path::to_path_buf);
        Parser::file(path.display().to_string(), &text, dir).parse(stem)
    }
}
