//! `--sample PERIOD`: the time series of one end's streams. A thread of its
//! own reads every stream's counters, and a TCP sender's tcp_info (a TCP
//! receiver's for the bytes that arrived, see [`crate::arrivals`]), on an
//! absolute schedule (start + k x period), into vectors allocated before the
//! test starts. The stream threads never wait for it: it reads atomics and
//! calls getsockopt on duplicated descriptors, which the kernel serves
//! under the socket lock without blocking the sender's writes for long.

use crate::arrivals::Arrivals;
use crate::stream::StreamShared;
use crate::tcpinfo::{self, TcpInfo};
use linkperf_proto::results::{Limited, Role, Sample};
use linkperf_proto::TestConfig;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// tcp_info's snd_ssthresh before the first loss (TCP_INFINITE_SSTHRESH).
const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// The sampling thread of one end, while the test runs.
pub struct Series {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<Vec<Sample>>>,
}

impl Series {
    /// Starts sampling `streams` at `at` when the config asks for it
    /// (`tcp[i]`: stream i's TCP socket, if it has one; `arrivals[i]` its
    /// arrival counter, if it receives TCP).
    pub fn start(
        config: &TestConfig,
        streams: Vec<Arc<StreamShared>>,
        tcp: Vec<Option<TcpStream>>,
        arrivals: Vec<Option<Arrivals>>,
        at: Instant,
    ) -> Option<Series> {
        let period = Duration::try_from_secs_f64(config.sample_s?).ok()?;
        let capacity = usize::try_from(config.samples_per_stream()).ok()?;
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = Sampler {
            period,
            capacity,
            streams,
            tcp,
            arrivals,
            start: at,
            stop: stop.clone(),
        };
        let handle = std::thread::Builder::new()
            .name("lp-series".into())
            .spawn(move || sampler.run())
            .ok()?;
        Some(Series { stop, handle })
    }

    /// Takes a last sample of every stream still open and returns each
    /// stream's series (call once the stream threads are done).
    pub fn finish(self) -> Vec<Vec<Sample>> {
        self.stop.store(true, Ordering::Release);
        self.handle.thread().unpark();
        self.handle.join().unwrap_or_default()
    }
}

struct Sampler {
    period: Duration,
    capacity: usize,
    streams: Vec<Arc<StreamShared>>,
    tcp: Vec<Option<TcpStream>>,
    arrivals: Vec<Option<Arrivals>>,
    start: Instant,
    stop: Arc<AtomicBool>,
}

/// What the previous sample of a stream saw, for the per-sample deltas.
#[derive(Default)]
struct Last {
    at: Duration,
    bytes: u64,
    info: Option<TcpInfo>,
    done: bool,
}

impl Sampler {
    fn run(self) -> Vec<Vec<Sample>> {
        crate::sockopt::tighten_timer_slack();
        // Its wake-ups, not its CPU, set the period's accuracy: on a busy
        // machine a thread of ordinary priority waits milliseconds for a core.
        crate::modelsend::raise_priority();
        let mut series: Vec<Vec<Sample>> = self
            .streams
            .iter()
            .map(|_| Vec::with_capacity(self.capacity))
            .collect();
        self.wait_until(self.start);
        let mut last: Vec<Last> = (0..self.streams.len())
            .map(|i| Last {
                info: self.sender_info(i),
                ..Last::default()
            })
            .collect();
        let mut k: u32 = 1;
        loop {
            let stopped = self.wait_until(self.start + self.period * k);
            let open = self.sample_all(&mut series, &mut last);
            if !open || stopped {
                break;
            }
            // The next tick of the absolute schedule: after a stall, the
            // ticks already past are skipped, not taken late in a burst.
            let ticks = (self.start.elapsed().as_nanos() / self.period.as_nanos()) as u32;
            k = (k + 1).max(ticks + 1);
        }
        series
    }

    /// Sleeps until `due`, or until told to stop (then true).
    fn wait_until(&self, due: Instant) -> bool {
        loop {
            if self.stop.load(Ordering::Acquire) {
                return true;
            }
            let now = Instant::now();
            if now >= due {
                return false;
            }
            std::thread::park_timeout(due - now);
        }
    }

    fn sender_info(&self, i: usize) -> Option<TcpInfo> {
        let sock = self.tcp[i].as_ref()?;
        (self.streams[i].role == Role::Sender)
            .then(|| tcpinfo::read(sock).ok())
            .flatten()
    }

    /// A TCP receiver's bytes that arrived by now, read or not (`read`: what its
    /// thread has read, all there is once it finished); anything else's count.
    fn received(&self, i: usize, finished: bool, read: u64) -> u64 {
        match (&self.arrivals[i], &self.tcp[i]) {
            (Some(a), Some(sock)) if !finished => a.bytes(tcpinfo::read(sock).ok().as_ref(), read),
            _ => read,
        }
    }

    /// One sample of every stream not yet done; false when all are done.
    fn sample_all(&self, series: &mut [Vec<Sample>], last: &mut [Last]) -> bool {
        let mut open = false;
        for (i, s) in self.streams.iter().enumerate() {
            if last[i].done {
                continue;
            }
            // The time is the sample's, taken before tcp_info: that read
            // waits for the socket lock while the sender is in a write
            // (up to milliseconds on loopback), which is not the schedule's.
            let at = self.start.elapsed();
            // Read before the counter: a finished stream's count is final.
            let finished = s.finished.load(Ordering::Acquire);
            let bytes = self.received(i, finished, s.bytes.load(Ordering::Relaxed));
            let info = self.sender_info(i);
            let new = sample(&last[i], at, bytes, info.as_ref());
            if series[i].len() < self.capacity {
                series[i].push(new);
            } else if let Some(full) = series[i].last_mut() {
                stretch(full, new);
            }
            last[i] = Last {
                at,
                bytes,
                info,
                done: finished,
            };
            open |= !finished;
        }
        open
    }
}

/// One sample from the counters and tcp_info now and at the previous sample.
fn sample(prev: &Last, at: Duration, bytes: u64, now: Option<&TcpInfo>) -> Sample {
    let mut s = Sample {
        t: at.as_micros() as f64 / 1e6,
        bytes: bytes.saturating_sub(prev.bytes),
        ..Sample::default()
    };
    let Some(now) = now else {
        return s;
    };
    let ms = |us: Option<u32>| us.map(|v| f64::from(v) / 1000.0);
    s.cwnd_segments = now.snd_cwnd_segments;
    s.cwnd_bytes = now
        .snd_cwnd_segments
        .zip(now.snd_mss)
        .map(|(c, m)| u64::from(c) * u64::from(m));
    s.ssthresh_segments = now.snd_ssthresh.filter(|&v| v < INFINITE_SSTHRESH);
    s.srtt_ms = ms(now.rtt_us);
    s.rttvar_ms = ms(now.rttvar_us);
    s.delivery_rate_bps = now.delivery_rate.map(|r| r as f64 * 8.0);
    s.pacing_rate_bps = now
        .pacing_rate
        .filter(|&r| r != u64::MAX)
        .map(|r| r as f64 * 8.0);
    s.bytes_in_flight = in_flight(now);
    s.acked_bytes = now
        .bytes_acked
        .zip(prev.info.and_then(|p| p.bytes_acked))
        .map(|(n, p)| n.saturating_sub(p));
    s.retransmits = now.total_retrans.map(u64::from);
    s.limited =
        tcpinfo::limited(prev.info.as_ref(), now, at.saturating_sub(prev.at)).map(round_limited);
    s
}

/// A full series' last sample stretched to `new`'s time: its counts add up
/// (so the bytes still sum to all the stream moved), its state is `new`'s,
/// and its limited fractions, which covered only part of it, are dropped.
fn stretch(last: &mut Sample, new: Sample) {
    let bytes = last.bytes + new.bytes;
    let acked = last.acked_bytes.zip(new.acked_bytes).map(|(a, b)| a + b);
    *last = Sample {
        bytes,
        acked_bytes: acked,
        limited: None,
        ..new
    };
}

/// snd_nxt - snd_una: original bytes sent (bytes_sent counts retransmissions
/// too) less those acknowledged; else the unacked segments times the MSS.
fn in_flight(i: &TcpInfo) -> Option<u64> {
    match (i.bytes_sent, i.bytes_retrans, i.bytes_acked) {
        (Some(sent), Some(re), Some(acked)) => Some(sent.saturating_sub(re).saturating_sub(acked)),
        _ => i
            .unacked
            .zip(i.snd_mss)
            .map(|(n, m)| u64::from(n) * u64::from(m)),
    }
}

/// Four decimals: the fractions' precision is that of microsecond counters
/// over milliseconds, and the series must fit in one control frame.
fn round_limited(l: Limited) -> Limited {
    let r = |x: f64| (x * 1e4).round() / 1e4;
    Limited {
        rwnd: r(l.rwnd),
        sndbuf: r(l.sndbuf),
        network: r(l.network),
        app: r(l.app),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tcp_receivers_samples_count_what_arrived_before_it_was_read() {
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut tx = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (rx, _) = listener.accept().unwrap();
        let arrivals = Arrivals::new(&rx).expect("this kernel reports tcpi_bytes_received");
        // A receiving stream whose thread never gets to read.
        let stream = Arc::new(StreamShared::new(0, Role::Receiver));
        let config = TestConfig {
            sample_s: Some(0.02),
            duration_s: 1.0,
            ..TestConfig::default()
        };
        let handles = vec![Some(rx.try_clone().unwrap())];
        let series = Series::start(
            &config,
            vec![stream.clone()],
            handles,
            vec![Some(arrivals)],
            Instant::now(),
        )
        .unwrap();
        // Less than the receive window: all of it arrives with nobody reading.
        tx.write_all(&[5u8; 60_000]).unwrap();
        std::thread::sleep(Duration::from_millis(150));
        stream.finished.store(true, Ordering::Release);
        let samples = series.finish().remove(0);
        let arrived: u64 = samples.iter().map(|s| s.bytes).sum();
        assert_eq!(arrived, 60_000, "{samples:?}");
        assert!(samples.len() >= 3, "{samples:?}");
    }

    #[test]
    fn a_sample_holds_the_deltas_and_the_kernel_state() {
        let prev = Last {
            at: Duration::from_millis(10),
            bytes: 1000,
            info: Some(TcpInfo {
                bytes_acked: Some(50_000),
                busy_time_us: Some(10_000),
                rwnd_limited_us: Some(0),
                sndbuf_limited_us: Some(0),
                ..TcpInfo::default()
            }),
            done: false,
        };
        let now = TcpInfo {
            snd_cwnd_segments: Some(10),
            snd_mss: Some(1448),
            snd_ssthresh: Some(INFINITE_SSTHRESH),
            rtt_us: Some(2500),
            bytes_sent: Some(100_000),
            bytes_retrans: Some(2_000),
            bytes_acked: Some(90_000),
            busy_time_us: Some(20_000),
            rwnd_limited_us: Some(5_000),
            sndbuf_limited_us: Some(0),
            ..TcpInfo::default()
        };
        let s = sample(&prev, Duration::from_millis(20), 5000, Some(&now));
        assert_eq!((s.t, s.bytes), (0.02, 4000));
        assert_eq!(s.cwnd_bytes, Some(14_480));
        assert_eq!(s.ssthresh_segments, None, "infinite: still in slow start");
        assert_eq!(s.srtt_ms, Some(2.5));
        assert_eq!(s.bytes_in_flight, Some(8_000));
        assert_eq!(s.acked_bytes, Some(40_000));
        let l = s.limited.unwrap();
        assert_eq!((l.rwnd, l.app), (0.5, 0.0), "{l:?}");
    }
}
