//! A flow's traffic: the model each direction uses (an application
//! profile may give the two directions different ones) and the run's seed.

use crate::model::{Loader, Model};
use crate::profiles;
use serde::{Deserialize, Serialize};

/// A flow's traffic: the model each direction uses (the same unless an
/// application profile differs, as WWW's small requests and large
/// responses), and the seed that makes the run reproducible.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Traffic {
    /// The application profile's name, when one was chosen.
    pub profile: Option<String>,
    /// Client to server.
    pub forward: Model,
    /// Server to client (`-R`, `--bidir`).
    pub reverse: Model,
    /// `None` until the client picks one for the run.
    pub seed: Option<u64>,
}

impl Traffic {
    /// Parses a model or a profile name; `load` reads trace files.
    pub fn parse(text: &str, load: Loader) -> Result<Traffic, String> {
        let text = text.trim();
        if let Some(p) = profiles::find(text) {
            return Ok(Traffic {
                profile: Some(p.name.to_string()),
                forward: p.forward.clone(),
                reverse: p.reverse.clone().unwrap_or_else(|| p.forward.clone()),
                seed: None,
            });
        }
        let model = Model::parse(text, load)?;
        Ok(Traffic {
            profile: None,
            forward: model.clone(),
            reverse: model,
            seed: None,
        })
    }

    /// The text a user would write for it: the profile's name or the model.
    pub fn text(&self) -> String {
        match &self.profile {
            Some(p) => p.clone(),
            None => self.forward.text(),
        }
    }

    /// The model of the side that sends in `forward` direction or not.
    pub fn model(&self, forward: bool) -> &Model {
        if forward {
            &self.forward
        } else {
            &self.reverse
        }
    }

    /// True for `full` and `cbr`, which linkperf's plain senders run.
    pub fn is_plain(&self) -> bool {
        self.forward.is_plain() && self.reverse.is_plain()
    }

    /// True for `cbr`, which paces at `-b`.
    pub fn is_cbr(&self) -> bool {
        self.forward == Model::Cbr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_files(_: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::ErrorKind::NotFound.into())
    }

    #[test]
    fn a_trace_is_read_through_the_loader() {
        let load = |p: &str| -> std::io::Result<Vec<u8>> {
            assert_eq!(p, "v.csv");
            Ok(b"0,100\n0.5,300\n".to_vec())
        };
        let t = Traffic::parse("trace:v.csv", &load).unwrap();
        assert_eq!(t.text(), "trace:v.csv");
        // 400 bytes per 1 s round.
        assert!((t.forward.mean_rate_bps().unwrap() - 3200.0).abs() < 1e-9);
    }

    #[test]
    fn profiles_give_each_direction_its_model() {
        let t = Traffic::parse("www", &no_files).unwrap();
        assert_eq!(t.profile.as_deref(), Some("www"));
        assert_ne!(t.forward, t.reverse);
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(serde_json::from_str::<Traffic>(&json).unwrap(), t);
    }
}
