//! Child processes: spawning them detached with their output in a log file, telling whether a recorded pid is
//! still the process we started, and stopping it (SIGTERM, then SIGKILL after a grace period).
//!
//! A pid from `devnet.json` is signalled only when its command line still shows the command we started ([`Expect`]),
//! so a pid the kernel has recycled for another program is never touched. On Linux the command line and state come
//! from `/proc`; elsewhere (macOS) from `ps -ww -o stat=,args=` — that path is compiled and tested on Linux too, but
//! has not run on a Mac.

use crate::error::DevnetError;
use rustix::process::{Pid, Signal, kill_process};
use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What a recorded process's command line must look like for it to be ours.
#[derive(Debug, Clone)]
pub(crate) enum Expect {
    /// anvil listening on this port: argv[0]'s file name contains `anvil` and the arguments hold `--port PORT`.
    Anvil {
        /// The port recorded for it.
        port: u16,
    },
    /// The services process for this devnet folder: the arguments hold `devnet services --dir DIR`.
    Services {
        /// The devnet folder as passed on its command line.
        dir: String,
    },
}

impl Expect {
    /// Whether `argv` matches.
    pub(crate) fn matches(&self, argv: &[String]) -> bool {
        match self {
            Self::Anvil { port } => {
                let exe_is_anvil = argv
                    .first()
                    .and_then(|a| Path::new(a).file_name())
                    .is_some_and(|name| name.to_string_lossy().contains("anvil"));
                let port = port.to_string();
                exe_is_anvil && argv.windows(2).any(|w| w[0] == "--port" && w[1] == port)
            }
            // The folder is the last argument; joined, so a folder with spaces matches also when the command line
            // came from `ps` (one string, split on spaces).
            Self::Services { dir } => argv
                .windows(3)
                .position(|w| w[0] == "devnet" && w[1] == "services" && w[2] == "--dir")
                .is_some_and(|at| argv[at + 3..].join(" ") == *dir),
        }
    }
}

/// The command line of `pid`, or `None` when there is no such (non-zombie) process.
pub(crate) fn cmdline(pid: u32) -> Option<Vec<String>> {
    if cfg!(target_os = "linux") { proc_cmdline(pid) } else { ps_cmdline(pid) }
}

/// Whether `pid` exists and is not a zombie.
pub(crate) fn is_running(pid: u32) -> bool {
    if cfg!(target_os = "linux") { proc_is_running(pid) } else { ps_is_running(pid) }
}

fn proc_cmdline(pid: u32) -> Option<Vec<String>> {
    if !proc_is_running(pid) {
        return None;
    }
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    if raw.is_empty() {
        return None;
    }
    Some(
        raw.split(|b| *b == 0)
            .filter(|part| !part.is_empty())
            .map(|part| String::from_utf8_lossy(part).into_owned())
            .collect(),
    )
}

fn proc_is_running(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // The state is the first field after the command name, which is in parentheses and may contain spaces.
    let state = stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next());
    !matches!(state, None | Some("Z") | Some("X") | Some("x"))
}

/// `ps -ww -o FIELD= -p PID` (POSIX `ps`, as on macOS and Linux), trimmed; `None` when there is no such process.
fn ps(pid: u32, field: &str) -> Option<String> {
    // From an absolute PATH folder only (the working folder must not supply it), else the usual places.
    let ps = crate::anvil::program_on_path("ps", std::env::var_os("PATH").map(std::path::PathBuf::from))
        .or_else(|| ["/bin/ps", "/usr/bin/ps"].into_iter().map(std::path::PathBuf::from).find(|p| p.is_file()))?;
    let out = Command::new(ps)
        .args(["-ww", "-o", &format!("{field}="), "-p", &pid.to_string()])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn ps_is_running(pid: u32) -> bool {
    ps(pid, "stat").is_some_and(|state| !state.starts_with('Z'))
}

fn ps_cmdline(pid: u32) -> Option<Vec<String>> {
    if !ps_is_running(pid) {
        return None;
    }
    Some(ps(pid, "args")?.split(' ').filter(|a| !a.is_empty()).map(str::to_owned).collect())
}

/// Whether `pid` is alive and still the process described by `expect`.
pub(crate) fn is_ours(pid: u32, expect: &Expect) -> bool {
    pid > 1 && pid != std::process::id() && cmdline(pid).is_some_and(|argv| expect.matches(&argv))
}

/// How stopping a recorded process went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopOutcome {
    /// It exited after SIGTERM.
    Terminated,
    /// It ignored SIGTERM and was killed with SIGKILL.
    Killed,
    /// It was not running any more.
    AlreadyGone,
    /// The pid now belongs to another program; it was left alone.
    NotOurs,
    /// It survived SIGKILL (should not happen); see the message.
    StillRunning,
}

fn signal(pid: u32, sig: Signal) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        // ESRCH (already gone) is fine: the caller polls /proc afterwards.
        let _ = kill_process(pid, sig);
    }
}

async fn wait_gone(pid: u32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if !is_running(pid) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Stops `pid` if it is still ours: SIGTERM, up to `grace` to exit, then SIGKILL.
pub(crate) async fn stop(pid: u32, expect: &Expect, grace: Duration) -> StopOutcome {
    if !is_running(pid) {
        return StopOutcome::AlreadyGone;
    }
    if !is_ours(pid, expect) {
        return StopOutcome::NotOurs;
    }
    signal(pid, Signal::TERM);
    if wait_gone(pid, grace).await {
        return StopOutcome::Terminated;
    }
    if !is_ours(pid, expect) {
        return if is_running(pid) { StopOutcome::NotOurs } else { StopOutcome::Terminated };
    }
    signal(pid, Signal::KILL);
    if wait_gone(pid, Duration::from_secs(3)).await { StopOutcome::Killed } else { StopOutcome::StillRunning }
}

/// Spawns `cmd` with stdin closed and stdout/stderr appended to `log`. With `detached`, the child gets its own
/// process group, so a Ctrl-C aimed at the caller's terminal does not reach it and it outlives the caller.
pub(crate) fn spawn_logged(mut cmd: Command, log: &Path, detached: bool, what: &str) -> Result<Child, DevnetError> {
    let out = File::create(log).map_err(|e| DevnetError::io(format!("creating {}", log.display()), e))?;
    let err = out.try_clone().map_err(|e| DevnetError::io(format!("opening {}", log.display()), e))?;
    cmd.stdin(Stdio::null()).stdout(Stdio::from(out)).stderr(Stdio::from(err));
    if detached {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    cmd.spawn().map_err(|e| DevnetError::io(format!("starting {what} ({})", cmd.get_program().to_string_lossy()), e))
}

/// Kills a child we still hold and reaps it.
pub(crate) fn kill_child(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Lets a started child run on: a background thread reaps it when it exits, so it never lingers as a zombie of a
/// long-lived caller (a test process); a short-lived caller (the CLI) simply exits and the child is re-parented.
pub(crate) fn release(mut child: Child) {
    let spawned = std::thread::Builder::new().name("holdfast-devnet-reaper".into()).spawn(move || {
        let _ = child.wait();
    });
    // Without the thread the child is still fine; it is reaped when the caller exits.
    drop(spawned);
}

/// The last `lines` lines of a log file (empty when it cannot be read).
pub(crate) fn log_tail(path: &Path, lines: usize) -> String {
    let Ok(bytes) = std::fs::read(path) else { return String::new() };
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn anvil_is_recognised_by_port() {
        let a = argv(&["/x/bin/anvil", "--host", "127.0.0.1", "--port", "8545", "--silent"]);
        assert!(Expect::Anvil { port: 8545 }.matches(&a));
        assert!(!Expect::Anvil { port: 8546 }.matches(&a));
        assert!(!Expect::Anvil { port: 8545 }.matches(&argv(&["/usr/bin/python3", "--port", "8545"])));
    }

    #[test]
    fn services_are_recognised_by_dir() {
        let a = argv(&["/x/holdfast", "devnet", "services", "--dir", "/tmp/d"]);
        assert!(Expect::Services { dir: "/tmp/d".into() }.matches(&a));
        assert!(!Expect::Services { dir: "/tmp/e".into() }.matches(&a));
        assert!(!Expect::Services { dir: "/tmp".into() }.matches(&a), "a prefix of the folder is another folder");
        let spaced = argv(&["/x/holdfast", "devnet", "services", "--dir", "/Users/me/my", "devnet"]);
        assert!(Expect::Services { dir: "/Users/me/my devnet".into() }.matches(&spaced));
    }

    #[test]
    fn the_ps_path_sees_what_proc_sees() {
        let dir = tempfile::tempdir().unwrap();
        let spaced = dir.path().join("my devnet");
        std::fs::create_dir(&spaced).unwrap();
        // A stand-in for the services process: `sh -c 'sleep 30; true' sh devnet services --dir "<folder with a space>"`.
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30; true", "sh", "devnet", "services", "--dir"])
            .arg(&spaced)
            .spawn()
            .unwrap();
        let pid = child.id();
        let expect = Expect::Services { dir: spaced.display().to_string() };
        assert!(ps_is_running(pid) && proc_is_running(pid));
        assert!(expect.matches(&ps_cmdline(pid).unwrap()), "{:?}", ps_cmdline(pid));
        assert!(expect.matches(&proc_cmdline(pid).unwrap()));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!ps_is_running(pid) && !proc_is_running(pid));
        assert_eq!(ps_cmdline(pid), None);
    }

    #[test]
    fn our_own_process_is_running_but_never_ours() {
        let me = std::process::id();
        assert!(is_running(me));
        assert!(!is_ours(me, &Expect::Anvil { port: 1 }));
        assert!(!is_running(u32::MAX - 1));
    }
}
