//! MPTCP in a multi-homed host (`mptcp = true`): the in-kernel path manager of the host's
//! namespace gets a `subflow` endpoint for each interface but the first, bound to its
//! device, and limits allowing that many extra subflows (and as many addresses announced
//! by the peer). An MPTCP connection opened from the host's first address then adds one
//! subflow from each further interface to the same peer address, each leaving by its own
//! device, so each crosses its own link; the peer accepts them with its own limits (give
//! the peer `mptcp = true` too).

use crate::error::TestbedError;
use crate::netns::{self, ip_batch};
use crate::state::Plan;
use crate::topology::Host;

/// The `ip` batch lines for host `h` (see the module comment).
pub fn commands(plan: &Plan, h: &Host) -> Vec<String> {
    let extra = h.interfaces.len().saturating_sub(1).max(1);
    let mut cmds = vec![
        "mptcp endpoint flush".to_string(),
        format!("mptcp limits set subflow {extra} add_addr_accepted {extra}"),
    ];
    for i in h.interfaces.iter().skip(1) {
        if let Some(end) = plan.end_at(i.link, &h.name) {
            cmds.push(format!(
                "mptcp endpoint add {} dev {} subflow",
                i.ipv4, end.device
            ));
        }
    }
    cmds
}

/// Configures the path manager of host `h`'s namespace; one clear line if the kernel
/// has no MPTCP or has it switched off.
pub fn configure(plan: &Plan, h: &Host) -> Result<(), TestbedError> {
    let ns = netns::netns_name(&plan.topology.name, &h.name);
    let enabled = netns::in_netns(&ns, || {
        Ok(std::fs::read_to_string("/proc/sys/net/mptcp/enabled").ok())
    })?;
    match enabled.as_deref().map(str::trim) {
        Some("1") => {}
        Some(_) => {
            return Err(TestbedError::runtime(format!(
                "host '{}' has mptcp = true but MPTCP is switched off (sysctl net.mptcp.enabled=0); enable it with sysctl -w net.mptcp.enabled=1",
                h.name
            )))
        }
        None => {
            return Err(TestbedError::runtime(format!(
                "host '{}' has mptcp = true but this kernel has no MPTCP (no /proc/sys/net/mptcp); use a kernel built with CONFIG_MPTCP",
                h.name
            )))
        }
    }
    ip_batch(&ns, &commands(plan, h))
}
