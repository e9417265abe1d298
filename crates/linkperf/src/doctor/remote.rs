//! The doctor across a test's control connection (`client --doctor`): the
//! server examines its own host against the path the client names and answers
//! with the examination, bounded to [`MAX_DOCTOR_BYTES`]; the client reads the
//! answer back, or says why the server did not report. Nothing is ever applied
//! on the far end: the answer carries the commands to paste there.

use super::{examine, Examination, Finding, Status, Target};
use linkperf_proto::config::DoctorRequest;
use linkperf_proto::messages::MAX_DOCTOR_BYTES;

/// The request for `target`, as it travels in the test's configuration.
pub fn request(target: &Target) -> DoctorRequest {
    DoctorRequest {
        rate_bits_per_second: target.rate_bits_per_second,
        rtt_seconds: target.rtt_seconds,
        mtu: target.mtu,
    }
}

/// The server's answer: this host examined against `request`, as JSON of at
/// most [`MAX_DOCTOR_BYTES`]. A host with more findings than fit sends the
/// first ones and a note saying how many it left out.
pub fn answer(request: &DoctorRequest) -> Option<serde_json::Value> {
    let target = Target::new(
        request.rate_bits_per_second,
        request.rtt_seconds,
        request.mtu,
    )
    .ok()?;
    bounded(examine(&target))
}

fn bounded(mut exam: Examination) -> Option<serde_json::Value> {
    let total = exam.findings.len();
    loop {
        let value = serde_json::to_value(&exam).ok()?;
        if value.to_string().len() <= MAX_DOCTOR_BYTES {
            return Some(value);
        }
        // Halve what is kept (the sysctls come first) and say so at the end.
        let keep = exam.findings.len().saturating_sub(1) / 2;
        if keep == 0 {
            return None;
        }
        exam.findings.truncate(keep);
        exam.findings.push(Finding {
            item: "findings not sent".into(),
            status: Status::Note,
            current: format!("{} of {total} left out", total - keep),
            needed: "-".into(),
            why: format!("the answer is limited to {MAX_DOCTOR_BYTES} bytes; run `linkperf doctor` on the server for all"),
            fix: None,
        });
    }
}

/// What the server answered: its examination, or why there is none (the one
/// line printed as "server: not reported (...)").
pub fn read_answer(answer: Option<&serde_json::Value>) -> Result<Examination, String> {
    let value = answer.ok_or(
        "the server did not answer the doctor request (an older linkperf server, or an iperf3 server)",
    )?;
    if value.to_string().len() > MAX_DOCTOR_BYTES {
        return Err(format!(
            "the server's answer is over {MAX_DOCTOR_BYTES} bytes"
        ));
    }
    serde_json::from_value(value.clone())
        .map_err(|e| format!("the server's answer is unreadable: {e}"))
}

/// `doctor` in a result: this host's examination beside the server's (or
/// the reason it is missing).
pub fn document(local: &Examination, server: &Result<Examination, String>) -> serde_json::Value {
    match server {
        Ok(exam) => {
            serde_json::json!({"local": local, "server": exam, "server_status": "reported"})
        }
        Err(why) => serde_json::json!({
            "local": local,
            "server": null,
            "server_status": format!("not reported: {why}")
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exam_with(findings: usize) -> Examination {
        let target = Target::new(40e6, 0.02, None).unwrap();
        Examination {
            target,
            bdp_bytes: target.bdp_bytes(),
            findings: (0..findings)
                .map(|i| Finding {
                    item: format!("veth{i} txqueuelen"),
                    status: Status::Ok,
                    current: "1000".into(),
                    needed: ">= 1000".into(),
                    why: "x".repeat(200),
                    fix: None,
                })
                .collect(),
        }
    }

    #[test]
    fn a_large_answer_is_cut_to_the_bound_and_says_so() {
        let value = bounded(exam_with(2000)).unwrap();
        assert!(value.to_string().len() <= MAX_DOCTOR_BYTES);
        let back = read_answer(Some(&value)).unwrap();
        let last = back.findings.last().unwrap();
        assert_eq!(last.item, "findings not sent");
        let kept = back.findings.len() - 1;
        assert_eq!(last.current, format!("{} of 2000 left out", 2000 - kept));
        // A small one goes whole.
        let small = bounded(exam_with(3)).unwrap();
        assert_eq!(read_answer(Some(&small)).unwrap().findings.len(), 3);
    }

    #[test]
    fn no_answer_and_a_strange_answer_are_reasons() {
        assert!(read_answer(None).unwrap_err().contains("did not answer"));
        let odd = serde_json::json!({"findings": 3});
        assert!(read_answer(Some(&odd)).unwrap_err().contains("unreadable"));
    }
}
