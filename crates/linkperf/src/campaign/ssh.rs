//! Temporary agents over the user's own OpenSSH: `ssh = "user@host"` in the
//! campaign file. linkperf uses the remote `linkperf` when there is one, or
//! copies its own binary there (through ssh itself); the agent runs for the campaign only, and is
//! stopped (and the copy removed) when the controller closes the session's
//! standard input, which also happens if the controller dies.

use super::plan::Agent;
use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

pub struct SshAgent {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
}

/// How long an agent started over ssh may take to answer on its port.
const AGENT_START_LIMIT: Duration = Duration::from_secs(30);

const SSH_OPTIONS: [&str; 4] = [
    "-o",
    "BatchMode=yes",
    "-o",
    "StrictHostKeyChecking=accept-new",
];

fn ssh(agent: &Agent, target: &str, remote: &str) -> Command {
    let mut c = Command::new("ssh");
    c.args(SSH_OPTIONS)
        .args(&agent.ssh_options)
        .arg(target)
        .arg(remote);
    c
}

/// Single-quotes a word for the remote shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn remote_binary(agent: &Agent, target: &str) -> Result<(String, bool), String> {
    let found = ssh(agent, target, "command -v linkperf")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("agent '{}': cannot run ssh: {e}", agent.name))?;
    if found.status.success() {
        let path = String::from_utf8_lossy(&found.stdout).trim().to_string();
        if !path.is_empty() {
            return Ok((path, false));
        }
    }
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find this program to copy: {e}"))?;
    let binary =
        std::fs::File::open(&exe).map_err(|e| format!("cannot read {}: {e}", exe.display()))?;
    let path = format!("/tmp/linkperf-agent-{}-{}", std::process::id(), agent.name);
    // Through ssh's standard input: needs only a shell there, not an SFTP subsystem.
    let copied = ssh(
        agent,
        target,
        &format!("cat > {p} && chmod +x {p}", p = quote(&path)),
    )
    .stdin(binary)
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .output()
    .map_err(|e| format!("agent '{}': cannot run ssh: {e}", agent.name))?;
    if !copied.status.success() {
        return Err(format!(
            "agent '{}': copying linkperf to {target} failed: {}",
            agent.name,
            String::from_utf8_lossy(&copied.stderr).trim()
        ));
    }
    Ok((path, true))
}

fn start(agent: &Agent, target: &str) -> Result<SshAgent, String> {
    let (path, copied) = remote_binary(agent, target)?;
    let cleanup = if copied {
        format!("; rm -f {}", quote(&path))
    } else {
        String::new()
    };
    let remote = format!(
        "chmod +x {p} 2>/dev/null; {p} server --allow-third-party -q -p {port} & pid=$!; read _; kill $pid{cleanup}",
        p = quote(&path),
        port = agent.port
    );
    let mut child = ssh(agent, target, &remote)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("agent '{}': cannot run ssh: {e}", agent.name))?;
    let stdin = child.stdin.take();
    // Wait until the agent answers, or ssh gives up. Success returns at once, so
    // the limit is generous: ssh, the remote shell and the agent's start-up on a
    // busy or distant host took over 10 s on a loaded 2-CPU test machine.
    let deadline = Instant::now() + AGENT_START_LIMIT;
    loop {
        if super::controller::probe(agent).is_ok() {
            return Ok(SshAgent {
                name: agent.name.clone(),
                child,
                stdin,
            });
        }
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            return Err(format!(
                "agent '{}': the ssh session to {target} ended ({status}): {}",
                agent.name,
                err.lines().last().unwrap_or("no message")
            ));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err(format!(
                "agent '{}': started over ssh but not answering on port {} within {} s",
                agent.name,
                agent.port,
                AGENT_START_LIMIT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts every SSH agent; on failure stops those already started.
pub fn start_all(agents: &mut [Agent]) -> Result<Vec<SshAgent>, String> {
    let mut started = Vec::new();
    for agent in agents.iter() {
        if let Some(target) = &agent.ssh {
            match start(agent, target) {
                Ok(a) => started.push(a),
                Err(e) => {
                    stop_all(started);
                    return Err(e);
                }
            }
        }
    }
    Ok(started)
}

/// Stops the agents: closing stdin ends the remote `read`, which kills the
/// agent and removes a copied binary.
pub fn stop_all(agents: Vec<SshAgent>) {
    for mut a in agents {
        if let Some(mut stdin) = a.stdin.take() {
            let _ = stdin.write_all(b"\n");
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match a.child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                _ => {
                    eprintln!(
                        "linkperf: agent '{}': ssh session did not end; killing it",
                        a.name
                    );
                    let _ = a.child.kill();
                    let _ = a.child.wait();
                    break;
                }
            }
        }
    }
}
