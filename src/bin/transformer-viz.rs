//! The command-line tool: traces, renders and converts models for teachers and tests.

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    transformer_viz::cli::main()
}

#[cfg(target_arch = "wasm32")]
fn main() {}
