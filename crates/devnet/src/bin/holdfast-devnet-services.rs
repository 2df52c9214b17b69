//! `holdfast-devnet-services devnet services --dir DIR`: the devnet's services process on its own, without the
//! full holdfast binary. It accepts the same arguments `holdfast` gets from `devnet up`, so it can stand in as
//! `UpOptions::services_exe` (the library's up/down tests use it that way).

use std::path::PathBuf;
use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!("usage: holdfast-devnet-services devnet services --dir DIR");
    ExitCode::from(2)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = match args.as_slice() {
        [devnet, services, flag, dir] if devnet == "devnet" && services == "services" && flag == "--dir" => {
            PathBuf::from(dir)
        }
        _ => return usage(),
    };
    match holdfast_devnet::run_services(&dir).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("holdfast-devnet-services: {e}");
            ExitCode::FAILURE
        }
    }
}
