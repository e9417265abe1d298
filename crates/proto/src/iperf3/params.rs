//! The test parameters an iperf3 client sends, as JSON and back. Reads and
//! writes the document only: what linkperf accepts of it is decided above.

use super::error::DecodeError;
use super::values::{flag, uint};
use serde_json::{json, Map, Value};

/// The test parameters an iperf3 client sends (only what linkperf reads;
/// unknown keys are kept in `other` so they can be refused by name).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Params {
    pub udp: bool,
    pub sctp: bool,
    pub omit: u64,
    pub time: u64,
    pub bytes: u64,
    pub blocks: u64,
    pub mss: u32,
    pub nodelay: bool,
    pub parallel: u32,
    pub reverse: bool,
    pub bidirectional: bool,
    pub window: u32,
    pub len: u32,
    pub bandwidth: u64,
    pub fqrate: u64,
    /// iperf3's pacing timer, microseconds (`None`: iperf3's 1000). Kept as a
    /// client sends it; a linkperf server paces its own way whatever it says
    /// (iperf3 sends its default when the user gave none, so it tells nothing).
    pub pacing_timer: Option<u32>,
    pub burst: u32,
    pub tos: u32,
    pub flowlabel: u32,
    pub title: Option<String>,
    pub extra_data: Option<String>,
    pub congestion: Option<String>,
    pub get_server_output: bool,
    pub udp_counters_64bit: bool,
    pub repeating_payload: bool,
    pub dont_fragment: bool,
    pub zerocopy: bool,
    pub authtoken: Option<String>,
    pub server_affinity: Option<i64>,
    pub client_version: Option<String>,
    /// Keys this codec does not know.
    pub other: Vec<String>,
}

impl Params {
    pub fn from_json(v: &Value) -> Result<Params, DecodeError> {
        let obj = v
            .as_object()
            .ok_or_else(|| DecodeError::BadJson("parameters are not an object".into()))?;
        let mut p = Params {
            parallel: 1,
            ..Default::default()
        };
        let text = |v: &Value| v.as_str().map(String::from);
        for (key, value) in obj {
            match key.as_str() {
                "tcp" => {}
                "udp" => p.udp = flag(value),
                "sctp" => p.sctp = flag(value),
                "omit" => p.omit = uint(value),
                "time" => p.time = uint(value),
                "num" => p.bytes = uint(value),
                "blockcount" => p.blocks = uint(value),
                "MSS" => p.mss = uint(value) as u32,
                "nodelay" => p.nodelay = flag(value),
                "parallel" => p.parallel = uint(value) as u32,
                "reverse" => p.reverse = flag(value),
                "bidirectional" => p.bidirectional = flag(value),
                "window" => p.window = uint(value) as u32,
                "len" => p.len = uint(value) as u32,
                "bandwidth" => p.bandwidth = uint(value),
                "fqrate" => p.fqrate = uint(value),
                "burst" => p.burst = uint(value) as u32,
                "TOS" => p.tos = uint(value) as u32,
                "flowlabel" => p.flowlabel = uint(value) as u32,
                "title" => p.title = text(value),
                "extra_data" => p.extra_data = text(value),
                "congestion" => p.congestion = text(value),
                "congestion_used" => {}
                "get_server_output" => p.get_server_output = flag(value),
                "udp_counters_64bit" => p.udp_counters_64bit = flag(value),
                "repeating_payload" => p.repeating_payload = flag(value),
                "dont_fragment" => p.dont_fragment = flag(value),
                "zerocopy" => p.zerocopy = flag(value),
                "authtoken" => p.authtoken = text(value),
                "server_affinity" => p.server_affinity = value.as_i64(),
                "client_version" => p.client_version = text(value),
                "pacing_timer" => {
                    p.pacing_timer = Some(u32::try_from(uint(value)).unwrap_or(u32::MAX))
                }
                other => p.other.push(other.to_string()),
            }
        }
        Ok(p)
    }

    /// The document an iperf3 client would send for these parameters.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            if self.udp { "udp" } else { "tcp" }.into(),
            Value::Bool(true),
        );
        m.insert("omit".into(), json!(self.omit));
        m.insert("time".into(), json!(self.time));
        m.insert("num".into(), json!(self.bytes));
        m.insert("blockcount".into(), json!(self.blocks));
        if self.mss > 0 {
            m.insert("MSS".into(), json!(self.mss));
        }
        if self.nodelay {
            m.insert("nodelay".into(), Value::Bool(true));
        }
        m.insert("parallel".into(), json!(self.parallel));
        if self.reverse {
            m.insert("reverse".into(), Value::Bool(true));
        }
        if self.bidirectional {
            m.insert("bidirectional".into(), Value::Bool(true));
        }
        if self.window > 0 {
            m.insert("window".into(), json!(self.window));
        }
        m.insert("len".into(), json!(self.len));
        if self.bandwidth > 0 {
            m.insert("bandwidth".into(), json!(self.bandwidth));
        }
        if self.fqrate > 0 {
            m.insert("fqrate".into(), json!(self.fqrate));
        }
        m.insert(
            "pacing_timer".into(),
            json!(self.pacing_timer.unwrap_or(1000)),
        );
        if self.burst > 0 {
            m.insert("burst".into(), json!(self.burst));
        }
        if self.tos > 0 {
            m.insert("TOS".into(), json!(self.tos));
        }
        if let Some(c) = &self.congestion {
            m.insert("congestion".into(), json!(c));
        }
        if self.get_server_output {
            m.insert("get_server_output".into(), json!(1));
        }
        if self.udp_counters_64bit {
            m.insert("udp_counters_64bit".into(), json!(1));
        }
        if self.dont_fragment {
            m.insert("dont_fragment".into(), json!(1));
        }
        if let Some(v) = &self.client_version {
            m.insert("client_version".into(), json!(v));
        }
        if let Some(t) = &self.authtoken {
            m.insert("authtoken".into(), json!(t));
        }
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_as_iperf3_3_12_sends_them() {
        let v: Value = serde_json::from_str(
            r#"{"udp":true,"omit":1,"time":0,"num":1048576,"blockcount":0,"parallel":1,
            "bidirectional":true,"window":262144,"len":1400,"bandwidth":100000000,
            "pacing_timer":1000,"burst":5,"TOS":16,"udp_counters_64bit":1,
            "repeating_payload":1,"dont_fragment":1,"client_version":"3.12"}"#,
        )
        .unwrap();
        let p = Params::from_json(&v).unwrap();
        assert!(p.udp && p.bidirectional && p.udp_counters_64bit && p.dont_fragment);
        assert!(p.repeating_payload);
        assert_eq!(
            (p.bytes, p.window, p.len, p.burst, p.tos),
            (1 << 20, 262_144, 1400, 5, 16)
        );
        assert_eq!(p.bandwidth, 100_000_000);
        assert_eq!(p.pacing_timer, Some(1000));
        assert!(p.other.is_empty());
        let back = Params::from_json(&p.to_json()).unwrap();
        assert_eq!((back.len, back.pacing_timer), (1400, Some(1000)));
        let asked = Params {
            pacing_timer: Some(250),
            ..Default::default()
        };
        assert_eq!(asked.to_json()["pacing_timer"], 250);
        assert_eq!(Params::default().to_json()["pacing_timer"], 1000);
        assert!(back.udp && back.bidirectional && back.udp_counters_64bit);
        let unknown = Params::from_json(&json!({"tcp": true, "fancy": 1})).unwrap();
        assert_eq!(unknown.other, vec!["fancy".to_string()]);
    }
}
