//! Writes the fuzz targets' seed corpus (linkperf_proto::fuzzing::seeds) to
//! fuzz/corpus/TARGET/NAME. Run from the repository root after changing a
//! message: `cargo run -p linkperf-proto --example fuzz_seeds`.

use std::path::Path;

fn main() -> std::io::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let root = root.canonicalize().unwrap_or(root);
    for (target, name, bytes) in linkperf_proto::fuzzing::seeds() {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(name), bytes)?;
    }
    println!("seeds written under {}", root.display());
    Ok(())
}
