//! The command-line tool ends normally when its reader closes the pipe early, as in
//! `transformer-viz trace --text ... | head -c 100`: exit status 0 and nothing on stderr.
//! Needs the model files (scripts/fetch-models.sh).

use std::io::Read;
use std::process::{Child, Command, Stdio};

const MODELS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/models");

fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_transformer-viz"))
        .args(args)
        .args(["--models-dir", MODELS_DIR])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the transformer-viz binary starts")
}

fn assert_quiet_success(child: Child) {
    let output = child
        .wait_with_output()
        .expect("the binary runs to its end");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "exit status {:?}, stderr: {stderr}",
        output.status
    );
    assert_eq!(stderr, "", "a closed pipe is a normal end, not an error");
}

#[test]
fn trace_read_for_100_bytes_then_closed_exits_quietly() {
    // `--full` prints megabytes: far more than a pipe's buffer (64 KiB), so the writes after the
    // reader leaves must meet the closed pipe.
    let mut child = spawn(&[
        "trace",
        "--full",
        "--text",
        "The quick brown fox jumps over the lazy dog.",
    ]);
    let mut stdout = child.stdout.take().unwrap();
    let mut head = [0u8; 100];
    stdout
        .read_exact(&mut head)
        .expect("the trace starts with 100 bytes of JSON");
    assert_eq!(head[0], b'{');
    drop(stdout); // what `head -c 100` does once it has its bytes
    assert_quiet_success(child);
}

#[test]
fn similarity_into_an_already_closed_pipe_exits_quietly() {
    let mut child = spawn(&["similarity", "--text", "A cat sleeps.", "A dog runs."]);
    drop(child.stdout.take()); // closed before the tool has loaded the model and printed anything
    assert_quiet_success(child);
}

#[test]
fn behaviours_into_an_already_closed_pipe_exits_quietly() {
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/models/corpus");
    let mut child = spawn(&[
        "behaviours",
        "--model",
        "lecture-pre-ln",
        "--count",
        "5",
        "--corpus",
        corpus,
    ]);
    drop(child.stdout.take()); // closed before the tool has measured anything
    assert_quiet_success(child);
}
