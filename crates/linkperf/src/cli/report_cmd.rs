//! `linkperf report ID -o FILE.html`: one self-contained HTML page (inline
//! SVG plots, no network needed to view it) of a stored run, sweep or
//! campaign. crates/report draws it from the archive export, the same JSON
//! `linkperf results export ID --format json` writes; `--from-export FILE`
//! reads such a file directly.

use clap::Args;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The run or sweep to report (see `linkperf results list`).
    #[arg(
        value_name = "ID",
        required_unless_present = "from_export",
        conflicts_with = "from_export"
    )]
    pub id: Option<i64>,
    /// Write the HTML page to this file.
    #[arg(short = 'o', long, value_name = "FILE.html")]
    pub output: PathBuf,
    /// The archive: a SQLite file or a postgres:// URL (default: the user's data directory).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<String>,
    /// Report an export file (`linkperf results export ID --format json`, or a
    /// campaign's -J output) instead of reading the archive; `-` reads stdin.
    #[arg(long, value_name = "FILE.json", conflicts_with = "db")]
    pub from_export: Option<PathBuf>,
}

/// Why the report was not written; each is one line for people.
enum Fail {
    /// Bad input: exit 2.
    Usage(String),
    /// Could not finish: exit 1.
    Run(String),
    /// Already reported by the archive code, with this exit code.
    Reported(ExitCode),
}

pub fn run(args: ReportArgs) -> ExitCode {
    match report(&args) {
        Ok(summary) => {
            say!("{summary}");
            ExitCode::SUCCESS
        }
        Err(Fail::Usage(m)) => {
            eprintln!("linkperf: {m}");
            ExitCode::from(2)
        }
        Err(Fail::Run(m)) => {
            eprintln!("linkperf: {m}");
            ExitCode::from(1)
        }
        Err(Fail::Reported(code)) => code,
    }
}

fn report(args: &ReportArgs) -> Result<String, Fail> {
    let (export, source) = match (&args.from_export, args.id) {
        (Some(path), _) => (read_export(path)?, path.display().to_string()),
        (None, Some(id)) => (
            export_from_archive(id, args.db.as_deref())?,
            format!("archive entry {id}"),
        ),
        (None, None) => return Err(Fail::Usage("give an ID or --from-export FILE".into())),
    };
    let html = linkperf_report::render(&export)
        .map_err(|e| Fail::Usage(format!("cannot report {source}: {e}")))?;
    write_atomically(&args.output, html.as_bytes())?;
    let kind = export
        .get("kind")
        .and_then(|k| k.as_str())
        .unwrap_or("campaign");
    let runs = export
        .get("runs")
        .and_then(|r| r.as_array())
        .map(Vec::len)
        .unwrap_or(0);
    Ok(format!(
        "wrote the report of {kind} {} ({runs} run{}) to {}",
        export
            .get("id")
            .map(|v| v.to_string().trim_matches('"').to_string())
            .unwrap_or_default(),
        if runs == 1 { "" } else { "s" },
        args.output.display()
    ))
}

fn read_export(path: &Path) -> Result<serde_json::Value, Fail> {
    let mut text = String::new();
    let read = if path.as_os_str() == "-" {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        std::fs::read_to_string(path).map(|t| text = t)
    };
    read.map_err(|e| Fail::Usage(format!("cannot read {}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| {
        Fail::Usage(format!(
            "{} is not JSON ({e}); make an export with `linkperf results export ID --format json`",
            path.display()
        ))
    })
}

/// The archive's export of `id`, through `linkperf results export` itself so
/// the report reads exactly what users export. It writes to a private
/// temporary file; its errors (unknown id, unreadable archive) are printed
/// by the results code as one line.
fn export_from_archive(id: i64, db: Option<&str>) -> Result<serde_json::Value, Fail> {
    use crate::results::{ExportFormat, ResultsArgs, ResultsCommand};
    let dir = std::env::temp_dir().join(format!("linkperf-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| Fail::Run(format!("cannot create {}: {e}", dir.display())))?;
    let file = dir.join(format!("export-{id}.json"));
    let _ = std::fs::remove_file(&file);
    let code = crate::results::run(ResultsArgs {
        db: db.map(str::to_string),
        command: ResultsCommand::Export {
            id,
            format: ExportFormat::Json,
            output: Some(file.clone()),
        },
    });
    let text = std::fs::read_to_string(&file);
    let _ = std::fs::remove_dir_all(&dir);
    let text = text.map_err(|_| Fail::Reported(code))?;
    serde_json::from_str(&text)
        .map_err(|e| Fail::Run(format!("the archive's export of {id} is not JSON: {e}")))
}

/// Writes next to the target, then renames: an interrupted report never
/// leaves half a page under the user's file name.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Fail> {
    let name = path
        .file_name()
        .ok_or_else(|| Fail::Usage(format!("-o {}: not a file name", path.display())))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let fail = |e: std::io::Error| Fail::Run(format!("cannot write {}: {e}", path.display()));
    std::fs::write(&tmp, bytes).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e)
    })
}
