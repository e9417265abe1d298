//! The short fuzz run of CI, on stable Rust: every file of every fuzz
//! target's corpus (fuzz/corpus/TARGET: the generated seeds and any input a
//! fuzzing campaign kept, crashes included once fixed) goes through the same
//! harness libFuzzer runs (linkperf_proto::fuzzing), whose assertions are
//! the checks, and then a bounded number of deterministic mutations of each
//! (a few seconds in all). Long runs: docs/security.md, "Fuzzing".

use linkperf_proto::fuzzing::{seeds, TARGETS};
use std::path::{Path, PathBuf};

/// Mutations tried per corpus file: bounded, so CI spends seconds.
const MUTATIONS: usize = 300;

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

#[test]
fn every_corpus_file_passes_its_harness() {
    for (target, harness) in TARGETS {
        let files = corpus(target);
        for (path, bytes) in &files {
            let run = std::panic::catch_unwind(|| harness(bytes));
            assert!(run.is_ok(), "{target}: {} fails", path.display());
        }
        let files = files.len();
        assert!(
            files > 0,
            "{target}: empty corpus in {}",
            corpus_dir(target).display()
        );
        println!("{target}: {files} corpus files replayed");
    }
}

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = corpus_dir(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus {} unreadable: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    files.sort();
    files
}

/// xorshift64: the same mutations on every run, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One to four edits of `bytes`: a byte set, a bit flipped, a cut, a
/// duplicated run, an inserted length-like value.
fn mutate(bytes: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(5) {
            0 if at < out.len() => out[at] = rng.next() as u8,
            1 if at < out.len() => out[at] ^= 1 << rng.below(8),
            2 => out.truncate(at),
            3 if at < out.len() => {
                let run = out[at..(at + 1 + rng.below(16)).min(out.len())].to_vec();
                out.splice(at..at, run);
            }
            _ => {
                let len = [0u32, 1, 0xff, 0x1000, 0x1001, 0x0100_0000, u32::MAX][rng.below(7)];
                out.splice(at..at, len.to_be_bytes());
            }
        }
    }
    out
}

#[test]
fn mutations_of_the_corpus_pass_their_harness() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for (target, harness) in TARGETS {
        let mut runs = 0;
        for (path, bytes) in corpus(target) {
            for _ in 0..MUTATIONS {
                let input = mutate(&bytes, &mut rng);
                let run = std::panic::catch_unwind(|| harness(&input));
                assert!(
                    run.is_ok(),
                    "{target}: a mutation of {} fails: {input:?}",
                    path.display()
                );
                runs += 1;
            }
        }
        println!("{target}: {runs} mutated inputs passed");
    }
}

#[test]
fn the_committed_seeds_are_the_generated_ones() {
    for (target, name, bytes) in seeds() {
        let path = corpus_dir(target).join(name);
        let committed = std::fs::read(&path).unwrap_or_default();
        assert!(
            committed == bytes,
            "{} differs from its generator: run `cargo run -p linkperf-proto --example fuzz_seeds`",
            path.display()
        );
    }
}
