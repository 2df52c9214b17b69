//! The binary's allocator: jemalloc, with its background thread on, so memory freed when sessions are unloaded goes
//! back to the system within seconds; glibc's `malloc` keeps a freed heap for reuse (measured by
//! `cargo bench -p holdfast-agent --bench idle_sessions`: docs/reliability.md).
//! Not on Windows' MSVC toolchain, which jemalloc does not support: the system allocator there.

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Turns on the allocator's background purging (dirty pages returned after about 10 s idle). A failure is logged:
/// the process works on, keeping freed memory for reuse.
pub(crate) fn return_freed_memory() {
    #[cfg(not(target_env = "msvc"))]
    if let Err(e) = tikv_jemalloc_ctl::background_thread::write(true) {
        tracing::warn!(error = %e, "allocator: background purging is off; freed memory is kept for reuse");
    }
}
