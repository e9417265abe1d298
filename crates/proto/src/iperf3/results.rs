//! The results each end sends the other after the test (per stream bytes,
//! retransmissions, UDP loss and jitter, CPU), as JSON and back. No framing.

use super::error::DecodeError;
use super::values::{signed, uint};
use serde_json::{json, Map, Value};

/// One stream in a results exchange.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamResults {
    pub id: u32,
    pub bytes: u64,
    /// -1: not a sender, or no retransmission count.
    pub retransmits: i64,
    /// Seconds.
    pub jitter: f64,
    /// Datagrams lost (UDP receiver).
    pub errors: u64,
    /// Datagrams sent (sender) or the highest count seen (receiver).
    pub packets: u64,
    pub start_time: f64,
    pub end_time: f64,
}

/// One end's results, exchanged after the test.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Results {
    pub cpu_util_total: f64,
    pub cpu_util_user: f64,
    pub cpu_util_system: f64,
    /// 1: sender with retransmission counts, 0: sender without, -1: receiver only.
    pub sender_has_retransmits: i64,
    pub congestion_used: Option<String>,
    pub streams: Vec<StreamResults>,
    pub server_output_text: Option<String>,
    pub server_output_json: Option<Value>,
}

impl Results {
    pub fn from_json(v: &Value) -> Result<Results, DecodeError> {
        let num = |k: &str| {
            v.get(k)
                .and_then(Value::as_f64)
                .ok_or_else(|| DecodeError::BadJson(format!("results without {k}")))
        };
        let streams = v
            .get("streams")
            .and_then(Value::as_array)
            .ok_or_else(|| DecodeError::BadJson("results without streams".into()))?;
        let mut out = Results {
            cpu_util_total: num("cpu_util_total")?,
            cpu_util_user: num("cpu_util_user")?,
            cpu_util_system: num("cpu_util_system")?,
            sender_has_retransmits: v.get("sender_has_retransmits").map(signed).ok_or_else(
                || DecodeError::BadJson("results without sender_has_retransmits".into()),
            )?,
            congestion_used: v
                .get("congestion_used")
                .and_then(Value::as_str)
                .map(String::from),
            streams: Vec::new(),
            server_output_text: v
                .get("server_output_text")
                .and_then(Value::as_str)
                .map(String::from),
            server_output_json: v.get("server_output_json").cloned(),
        };
        for s in streams {
            let f = |k: &str| s.get(k).and_then(Value::as_f64).unwrap_or(0.0);
            out.streams.push(StreamResults {
                id: s
                    .get("id")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| DecodeError::BadJson("stream without id".into()))?
                    as u32,
                bytes: s.get("bytes").map(uint).unwrap_or(0),
                retransmits: s.get("retransmits").map(signed).unwrap_or(-1),
                jitter: f("jitter"),
                errors: s.get("errors").map(uint).unwrap_or(0),
                packets: s.get("packets").map(uint).unwrap_or(0),
                start_time: f("start_time"),
                end_time: f("end_time"),
            });
        }
        Ok(out)
    }

    pub fn to_json(&self) -> Value {
        let streams: Vec<Value> = self
            .streams
            .iter()
            .map(|s| {
                json!({
                    "id": s.id,
                    "bytes": s.bytes,
                    "retransmits": s.retransmits,
                    "jitter": s.jitter,
                    "errors": s.errors,
                    "packets": s.packets,
                    "start_time": s.start_time,
                    "end_time": s.end_time,
                })
            })
            .collect();
        let mut m = Map::new();
        m.insert("cpu_util_total".into(), json!(self.cpu_util_total));
        m.insert("cpu_util_user".into(), json!(self.cpu_util_user));
        m.insert("cpu_util_system".into(), json!(self.cpu_util_system));
        m.insert(
            "sender_has_retransmits".into(),
            json!(self.sender_has_retransmits),
        );
        if let Some(c) = &self.congestion_used {
            m.insert("congestion_used".into(), json!(c));
        }
        if let Some(t) = &self.server_output_text {
            m.insert("server_output_text".into(), json!(t));
        }
        if let Some(j) = &self.server_output_json {
            m.insert("server_output_json".into(), j.clone());
        }
        m.insert("streams".into(), Value::Array(streams));
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_accept_minus_one_written_unsigned() {
        let v: Value = serde_json::from_str(
            r#"{"cpu_util_total":1.5,"cpu_util_user":0.5,"cpu_util_system":1.0,
            "sender_has_retransmits":1.8446744073709552e+19,
            "streams":[{"id":3,"bytes":1277952,"retransmits":18446744073709551615,
            "jitter":1.1e-05,"errors":2,"packets":39,"start_time":0,"end_time":1.000221}]}"#,
        )
        .unwrap();
        let r = Results::from_json(&v).unwrap();
        assert_eq!(r.sender_has_retransmits, -1);
        assert_eq!(r.streams[0].retransmits, -1);
        assert_eq!(r.streams[0].id, 3);
        assert_eq!((r.streams[0].errors, r.streams[0].packets), (2, 39));
        assert!(Results::from_json(&json!({"streams": []})).is_err());
    }
}
