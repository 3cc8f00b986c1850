//! The Rust side of the Python readers in `tests/python` (the formats' own, non-Rust
//! implementations), run from the project's venv: the end-to-end tests
//! (`fluss_lake_e2e::python`) and the plugins' own reader tests call them through this crate.
//!
//! Every reader call goes to a long-lived worker: `python <script> batch`
//! (`arrow_canonical.run_batch`), which answers one JSON line per command line. Importing the
//! readers costs far more than most reads (pypaimon ~2.7 CPU-s, pyiceberg or pylance ~1.4),
//! and a test binary makes dozens of calls, so each worker pays its imports once and then
//! serves calls until the test process exits. The scripts open every table afresh per command
//! (no reader cache outlives a command), so a worker reads what was committed before the call.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, mpsc};
use std::time::Duration;

use serde_json::Value;

/// The repository's root (this crate is `tests/python`).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository's root")
}

/// Runs commands of a reader script in `tests/python` (its `batch` mode) in one worker
/// process started with `env` beside the inherited environment; each command's output lines
/// (as JSON), or `Err(message)` when the command raised.
pub fn batch(
    script: &str,
    env: &[(String, String)],
    commands: &[Vec<String>],
) -> Vec<Result<Vec<Value>, String>> {
    batch_timed(script, env, commands)
        .into_iter()
        .map(|(r, _)| r)
        .collect()
}

/// [`batch`], with each command's wall time in seconds (Python's import not included).
///
/// Takes an idle worker of `script` started with `env` (or starts one), sends the commands
/// one at a time, each answered by one line, and puts the worker back. A worker that cannot
/// take a command, exits or answers something that is not an answer is killed, and the call
/// panics with what it wrote to stderr.
pub fn batch_timed(
    script: &str,
    env: &[(String, String)],
    commands: &[Vec<String>],
) -> Vec<(Result<Vec<Value>, String>, f64)> {
    let key = Key {
        script: script.to_string(),
        env: env.to_vec(),
    };
    let mut worker = take_idle(&key).unwrap_or_else(|| Worker::start(&key));
    worker.clear_stderr();
    let mut results = Vec::with_capacity(commands.len());
    for command in commands {
        match worker.ask(command) {
            Ok(answer) => results.push(answer),
            Err(e) => {
                let (status, stderr) = worker.stop();
                panic!("{script} batch failed on {command:?}: {e} ({status})\n{stderr}");
            }
        }
    }
    give_back(key, worker);
    results
}

/// The venv's Python.
pub fn python() -> PathBuf {
    let py = repo_root().join("target/venv/bin/python");
    assert!(
        py.exists(),
        "{} missing: run scripts/setup-python.sh",
        py.display()
    );
    py
}

/// What a worker was started with: its script and its environment (the end-to-end tests'
/// S3 environment changes once the test S3 server has started, and a worker keeps the
/// environment it was started with).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    script: String,
    env: Vec<(String, String)>,
}

/// The idle workers. Tests run on several threads, so a script can have several workers;
/// a call holds its worker outside the lock.
static IDLE: Mutex<BTreeMap<Key, Vec<Worker>>> = Mutex::new(BTreeMap::new());

/// Idle workers kept per script (each holds ~150-180 MB once its readers are imported); a
/// worker given back beyond these is stopped. Busy workers are not counted: as many run as
/// there are concurrent calls.
const MAX_IDLE_PER_SCRIPT: usize = 2;

fn idle() -> MutexGuard<'static, BTreeMap<Key, Vec<Worker>>> {
    IDLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An idle worker for `key` that is still running; workers that exited while idle are
/// dropped.
fn take_idle(key: &Key) -> Option<Worker> {
    loop {
        let mut worker = idle().get_mut(key)?.pop()?;
        if matches!(worker.child.try_wait(), Ok(None)) {
            return Some(worker);
        }
    }
}

fn give_back(key: Key, worker: Worker) {
    let mut idle = idle();
    let workers = idle.entry(key).or_default();
    if workers.len() < MAX_IDLE_PER_SCRIPT {
        workers.push(worker);
        return;
    }
    drop(idle);
    drop(worker);
}

/// What a worker wrote to stderr, kept to its last [`STDERR_KEPT`] bytes or so.
type StderrTail = Arc<Mutex<Vec<u8>>>;

const STDERR_KEPT: usize = 64 * 1024;

/// One `python <script> batch` process. Dropping it kills it and waits for it.
struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// Drained by a thread of its own, so a worker that writes much to stderr never blocks
    /// on a full pipe.
    stderr: StderrTail,
    /// Says when the stderr thread has seen the end of the pipe.
    stderr_done: mpsc::Receiver<()>,
}

impl Worker {
    fn start(key: &Key) -> Worker {
        let mut command = Command::new(python());
        command
            .arg(repo_root().join("tests/python").join(&key.script))
            .arg("batch")
            .envs(key.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let parent = std::process::id();
        // SAFETY: between fork and exec the closure only makes async-signal-safe system
        // calls (prctl, getppid) and allocates nothing.
        unsafe {
            command.pre_exec(move || {
                // The worker dies with the test process (idle workers are never dropped:
                // they live in a static), SIGKILL so a busy one stops too.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The test process died before prctl: nobody would kill this worker.
                if libc::getppid() as u32 != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
        let mut child = spawn_on_lasting_thread(command)
            .unwrap_or_else(|e| panic!("starting {} batch: {e}", key.script));
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut pipe = child.stderr.take().unwrap();
        let stderr = StderrTail::default();
        let (done, stderr_done) = mpsc::channel();
        let tail = Arc::clone(&stderr);
        std::thread::Builder::new()
            .name(format!("{} stderr", key.script))
            .spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n @ 1..) = pipe.read(&mut buf) {
                    let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                    tail.extend_from_slice(&buf[..n]);
                    if tail.len() > 2 * STDERR_KEPT {
                        let cut = tail.len() - STDERR_KEPT;
                        tail.drain(..cut);
                    }
                }
                let _ = done.send(());
            })
            .expect("starting a stderr thread");
        Worker {
            child,
            stdin,
            stdout,
            stderr,
            stderr_done,
        }
    }

    /// Forgets earlier calls' stderr, so a failure shows what its own call wrote.
    fn clear_stderr(&self) {
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Sends one command and reads its answer: `(output lines or the command's error,
    /// seconds)`; `Err` when the worker itself failed.
    fn ask(&mut self, command: &[String]) -> Result<(Result<Vec<Value>, String>, f64), String> {
        let mut line = serde_json::to_string(command).unwrap();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("cannot send the command: {e}"))?;
        let mut answer = String::new();
        match self.stdout.read_line(&mut answer) {
            Ok(0) => return Err("the worker exited without answering".into()),
            Ok(_) => {}
            Err(e) => return Err(format!("cannot read the answer: {e}")),
        }
        let garbage = || format!("not an answer: {:?}", answer.trim_end());
        let v: Value = serde_json::from_str(&answer).map_err(|_| garbage())?;
        let seconds = v["seconds"].as_f64().unwrap_or_default();
        let result = match (v.get("out"), v.get("error")) {
            (Some(Value::Array(out)), None) => Ok(out.clone()),
            (None, Some(Value::String(e))) => Err(e.clone()),
            _ => return Err(garbage()),
        };
        Ok((result, seconds))
    }

    /// Stops the worker (given a second to finish exiting on its own, then killed); how it
    /// ended and what it wrote to stderr.
    fn stop(mut self) -> (String, String) {
        let mut status = None;
        for _ in 0..100 {
            status = self.child.try_wait().ok().flatten();
            if status.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let status = match status {
            Some(s) => format!("it exited: {s}"),
            None => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                "it was still running: killed".into()
            }
        };
        // The pipe closes with the process (unless a child of it keeps it open).
        let _ = self.stderr_done.recv_timeout(Duration::from_secs(5));
        let stderr = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        (status, String::from_utf8_lossy(&stderr).into_owned())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Spawns `command` on a thread that lasts as long as the test process. `PR_SET_PDEATHSIG`
/// fires when the *thread* that forked the child ends, not the process, and libtest runs
/// each test on a thread of its own: a worker forked there would be killed when its first
/// test ended.
fn spawn_on_lasting_thread(command: Command) -> std::io::Result<Child> {
    type Request = (Command, mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: OnceLock<mpsc::Sender<Request>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (requests, incoming) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("python workers".into())
            .spawn(move || {
                for (mut command, reply) in incoming {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("starting the thread that spawns Python workers");
        requests
    });
    let (reply, answer) = mpsc::channel();
    spawner
        .send((command, reply))
        .expect("the spawning thread is running");
    answer.recv().expect("the spawning thread answers")
}
