//! Compiling a plugin as the untrusted workload it is.
//!
//! A small component can keep Cranelift busy for minutes and take gigabytes (a function
//! reading thousands of locals inside thousands of nested loops; a million tiny functions).
//! So before anything is compiled, [`check_structure`] refuses what no lake plugin needs
//! (counts and sizes read from the file in one pass, [`StructureLimits`]), and the binary then
//! compiles in a child process, itself re-executed with [`COMPILE_COMMAND`]: the component
//! goes in through a pipe, the compiled artifact comes back through another, the child runs
//! under `RLIMIT_AS` and `RLIMIT_CPU` and is killed at a wall deadline. Nothing of it runs on
//! the async runtime: a compile in progress never delays heartbeats, rounds, health answers or
//! other reloads.
//!
//! A library user without the binary (tests, the benchmark) compiles on a blocking thread of
//! its own ([`Compiler::InProcess`]), after the same structural check (which
//! [`PluginEngine::load`](super::engine::PluginEngine::load) makes before any compile).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::error::{Error, ErrorKind, Result};

/// The first argument that makes the binary a compile child (never typed by a user).
pub const COMPILE_COMMAND: &str = "__compile-plugin";

/// Where plugins are compiled.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Compiler {
    /// On a blocking thread of this process, bounded in structure only.
    #[default]
    InProcess,
    /// In a child process running this binary (its path) with [`COMPILE_COMMAND`].
    Child(PathBuf),
}

impl Compiler {
    /// This binary, re-executed with [`COMPILE_COMMAND`]: what the binary's commands (the
    /// host, `plugins inspect`, `plugins list`) compile with.
    pub fn this_binary() -> Result<Self> {
        // The running binary itself, even after it was replaced on disk by an upgrade.
        let proc_self = PathBuf::from("/proc/self/exe");
        if proc_self.exists() {
            return Ok(Compiler::Child(proc_self));
        }
        std::env::current_exe().map(Compiler::Child).map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                format!("cannot find this binary to compile plugins with: {e}"),
            )
        })
    }
}

/// What the structural check allows. The defaults are far above what the standard plugins
/// use (see `docs/`), far below what takes Cranelift minutes or gigabytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StructureLimits {
    /// Functions defined in all the component's core modules together.
    pub functions: u64,
    /// Bytes of one function body.
    pub function_bytes: u64,
    /// Locals of one function.
    pub locals: u64,
    /// Blocks, loops and ifs open at once in one function.
    pub nesting: u64,
    /// Globals, tables and memories defined in all core modules together.
    pub globals: u64,
    pub tables: u64,
    pub memories: u64,
    /// Core modules and components nested in the component.
    pub modules: u64,
}

impl Default for StructureLimits {
    fn default() -> Self {
        Self {
            functions: 200_000,
            function_bytes: 4 << 20,
            locals: 50_000,
            nesting: 1_000,
            globals: 100_000,
            tables: 1_000,
            memories: 100,
            modules: 1_000,
        }
    }
}

/// The bounds of one compilation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileLimits {
    pub structure: StructureLimits,
    /// Wall time of one compilation (`--plugin-compile-timeout`).
    pub timeout: Duration,
    /// Address space of the compile child (`--plugin-compile-memory-limit`).
    pub memory_bytes: u64,
    /// Largest compiled artifact taken back from the child.
    pub max_artifact_bytes: u64,
}

impl Default for CompileLimits {
    fn default() -> Self {
        Self {
            structure: StructureLimits::default(),
            timeout: Duration::from_secs(120),
            memory_bytes: 4 << 30,
            max_artifact_bytes: 1 << 30,
        }
    }
}

/// What the parent tells the child, as one JSON argument.
#[derive(Debug, Serialize, Deserialize)]
struct ChildRequest {
    perf_map: bool,
    structure: StructureLimits,
    memory_bytes: u64,
    cpu_seconds: u64,
    max_input_bytes: u64,
}

/// What a component holds, counted in one pass over its bytes: what [`StructureLimits`]
/// bounds, and what `plugins inspect` shows so an author sees how far a plugin is from them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Structure {
    pub functions: u64,
    /// The largest function body, in bytes.
    pub largest_function_bytes: u64,
    /// The most locals of one function.
    pub most_locals: u64,
    /// The deepest nesting of blocks, loops and ifs in one function.
    pub deepest_nesting: u64,
    pub globals: u64,
    pub tables: u64,
    pub memories: u64,
    pub modules: u64,
    /// Core instances the component creates (`instantiate` of a core module).
    pub core_instances: u64,
    instance_bytes: u64,
}

/// Host bytes per global, per function and per core instance (wasmtime's `VMGlobalDefinition`,
/// `VMFuncRef`, and the rest of a `VMContext` with its `Instance`, rounded up).
const GLOBAL_INSTANCE_BYTES: u64 = 16;
const FUNCTION_INSTANCE_BYTES: u64 = 32;
const MODULE_INSTANCE_BYTES: u64 = 4096;

impl Structure {
    /// Counts `bytes` in one pass; a file that does not parse (every operator of every
    /// function is read) is refused here, with the parser's words, so that no malformed part
    /// can hide a function the counts never saw.
    pub fn of(bytes: &[u8]) -> std::result::Result<Self, String> {
        use wasmparser::{Encoding, Operator, Parser, Payload};
        let malformed = |e: wasmparser::BinaryReaderError| format!("not a valid component: {e}");
        let mut s = Structure::default();
        // Per core module: the host structures of one of its instances (see
        // `instance_bytes`); `open` is the module being read, if any.
        let mut module_bytes: Vec<u64> = Vec::new();
        let mut open: Option<u64> = None;
        let mut nesting: Vec<Encoding> = Vec::new();
        for payload in Parser::new(0).parse_all(bytes) {
            match payload.map_err(malformed)? {
                Payload::Version { encoding, .. } => {
                    nesting.push(encoding);
                    if encoding == Encoding::Module {
                        open = Some(MODULE_INSTANCE_BYTES);
                    }
                }
                Payload::End(_) => {
                    if nesting.pop() == Some(Encoding::Module)
                        && let Some(bytes) = open.take()
                    {
                        module_bytes.push(bytes);
                    }
                }
                Payload::CodeSectionEntry(body) => {
                    s.functions += 1;
                    s.largest_function_bytes =
                        s.largest_function_bytes.max(body.range().len() as u64);
                    let mut locals = 0u64;
                    for local in body.get_locals_reader().map_err(malformed)? {
                        locals = locals.saturating_add(u64::from(local.map_err(malformed)?.0));
                    }
                    s.most_locals = s.most_locals.max(locals);
                    let mut ops = body.get_operators_reader().map_err(malformed)?;
                    let mut depth = 0u64;
                    while !ops.eof() {
                        match ops.read().map_err(malformed)? {
                            Operator::Block { .. }
                            | Operator::Loop { .. }
                            | Operator::If { .. }
                            | Operator::TryTable { .. } => {
                                depth += 1;
                                s.deepest_nesting = s.deepest_nesting.max(depth);
                            }
                            Operator::End => depth = depth.saturating_sub(1),
                            _ => {}
                        }
                    }
                    if let Some(b) = open.as_mut() {
                        *b += FUNCTION_INSTANCE_BYTES;
                    }
                }
                Payload::GlobalSection(r) => {
                    s.globals += u64::from(r.count());
                    if let Some(b) = open.as_mut() {
                        *b += u64::from(r.count()) * GLOBAL_INSTANCE_BYTES;
                    }
                }
                Payload::TableSection(r) => s.tables += u64::from(r.count()),
                Payload::MemorySection(r) => s.memories += u64::from(r.count()),
                Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => s.modules += 1,
                Payload::InstanceSection(r) => {
                    for instance in r {
                        if matches!(
                            instance.map_err(malformed)?,
                            wasmparser::Instance::Instantiate { .. }
                        ) {
                            s.core_instances += 1;
                        }
                    }
                }
                _ => {}
            }
        }
        // Every module instantiated once, and each further instantiation costed as the
        // largest module (a component may instantiate one module many times).
        let largest = module_bytes.iter().copied().max().unwrap_or(0);
        let extra = s.core_instances.saturating_sub(module_bytes.len() as u64);
        s.instance_bytes = module_bytes
            .iter()
            .sum::<u64>()
            .saturating_add(extra.saturating_mul(largest));
        Ok(s)
    }

    /// The first count over `limits`, as the one-line reason of a refusal.
    pub fn over(&self, limits: &StructureLimits) -> Option<String> {
        [
            (self.functions, limits.functions, "functions"),
            (
                self.largest_function_bytes,
                limits.function_bytes,
                "bytes in one function",
            ),
            (self.most_locals, limits.locals, "locals in one function"),
            (
                self.deepest_nesting,
                limits.nesting,
                "nested blocks in one function",
            ),
            (self.globals, limits.globals, "globals"),
            (self.tables, limits.tables, "tables"),
            (self.memories, limits.memories, "memories"),
            (self.modules, limits.modules, "modules"),
        ]
        .into_iter()
        .find(|(n, limit, _)| n > limit)
        .map(|(n, limit, what)| {
            format!("{n} {what}, over the limit of {limit}: refused before compiling")
        })
    }

    /// Host memory one instance of the component takes besides its linear memories and
    /// tables (which the sandbox counts as they grow): wasmtime keeps each global (16 bytes)
    /// and a reference to each function (32 bytes) in a core instance's context, plus some
    /// bookkeeping per core instance, for every core instance the component creates. Counted
    /// against the instance's memory limit, so a million globals cost their plugin its
    /// budget, not the host.
    pub fn instance_bytes(&self) -> u64 {
        self.instance_bytes
    }

    /// One line for `plugins inspect`.
    pub fn describe(&self) -> String {
        format!(
            "{} functions (largest {} bytes, most locals {}, deepest nesting {}), {} globals, \
             {} tables, {} memories, {} modules, {} core instances taking {} host bytes",
            self.functions,
            self.largest_function_bytes,
            self.most_locals,
            self.deepest_nesting,
            self.globals,
            self.tables,
            self.memories,
            self.modules,
            self.core_instances,
            self.instance_bytes
        )
    }
}

/// Why `bytes` is refused before compilation (malformed, or over `limits`); `None` when they
/// may be compiled.
pub fn check_structure(bytes: &[u8], limits: &StructureLimits) -> Option<String> {
    match Structure::of(bytes) {
        Ok(structure) => structure.over(limits),
        Err(malformed) => Some(malformed),
    }
}

/// Compiles `bytes` with `engine` as `compiler` says, under `limits`: the artifact
/// `Component::deserialize` takes, or a one-line reason (a [`ErrorKind::PluginLoad`] error
/// naming nothing: the caller names the file).
///
/// The caller has checked [`Structure::of`] these bytes against `limits.structure`; the
/// compile child checks again, as the only process that then holds them.
pub async fn compile(
    engine: &wasmtime::Engine,
    perf_map: bool,
    compiler: &Compiler,
    limits: &CompileLimits,
    bytes: &[u8],
) -> Result<Vec<u8>> {
    match compiler {
        Compiler::InProcess => {
            let engine = engine.clone();
            let bytes = bytes.to_vec();
            tokio::task::spawn_blocking(move || engine.precompile_component(&bytes))
                .await
                .map_err(|e| Error::new(ErrorKind::Internal, format!("compile thread: {e}")))?
                .map_err(|e| {
                    Error::new(
                        ErrorKind::PluginLoad,
                        format!("not a valid component: {e:#}"),
                    )
                })
        }
        Compiler::Child(binary) => compile_in_child(binary, perf_map, limits, bytes).await,
    }
}

async fn compile_in_child(
    binary: &std::path::Path,
    perf_map: bool,
    limits: &CompileLimits,
    bytes: &[u8],
) -> Result<Vec<u8>> {
    let refuse = |what: String| Error::new(ErrorKind::PluginLoad, what);
    let request = ChildRequest {
        perf_map,
        structure: limits.structure,
        memory_bytes: limits.memory_bytes,
        cpu_seconds: request_cpu_seconds(limits),
        max_input_bytes: bytes.len() as u64,
    };
    let request = serde_json::to_string(&request)
        .map_err(|e| Error::new(ErrorKind::Internal, format!("compile request: {e}")))?;
    let mut child = tokio::process::Command::new(binary)
        .arg(COMPILE_COMMAND)
        .arg(request)
        // Nothing of the host's environment (credentials among it) reaches the child.
        .env_clear()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                format!(
                    "cannot start the compile process {}: {e}",
                    super::sandbox::shown(binary)
                ),
            )
        })?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(Error::new(
            ErrorKind::Internal,
            "compile process without pipes",
        ));
    };
    let max_artifact = limits.max_artifact_bytes;
    let exchange = async {
        let write = async {
            // A child that exits early (refused) closes the pipe: its stderr says why.
            let _ = stdin.write_all(bytes).await;
            drop(stdin);
        };
        let read = async {
            let mut artifact = Vec::new();
            let read = stdout
                .take(max_artifact + 1)
                .read_to_end(&mut artifact)
                .await;
            read.map(|_| artifact)
        };
        let errors = async {
            let mut text = Vec::new();
            let _ = stderr.take(4096).read_to_end(&mut text).await;
            text
        };
        let ((), artifact, errors) = tokio::join!(write, read, errors);
        let status = child.wait().await;
        (artifact, errors, status)
    };
    let (artifact, errors, status) = match tokio::time::timeout(limits.timeout, exchange).await {
        Ok(done) => done,
        Err(_) => {
            // Killed and reaped before the next compile may start: its memory is free.
            let _ = child.start_kill();
            let _ = child.wait().await;
            return Err(refuse(format!(
                "compiling took longer than {} s (--plugin-compile-timeout); refused",
                limits.timeout.as_secs()
            )));
        }
    };
    // Before the exit status: a child cut off by the artifact bound fails writing it.
    if let Ok(artifact) = &artifact
        && artifact.len() as u64 > max_artifact
    {
        return Err(refuse(format!(
            "its compiled code is over {max_artifact} bytes; refused"
        )));
    }
    let errors = super::sandbox::plugin_text(
        String::from_utf8_lossy(&errors).trim(),
        super::sandbox::MAX_MESSAGE_CHARS,
    );
    let status = status.map_err(|e| {
        Error::new(
            ErrorKind::Internal,
            format!("waiting for the compile process: {e}"),
        )
    })?;
    if !status.success() {
        use std::os::unix::process::ExitStatusExt;
        return Err(refuse(match status.signal() {
            Some(libc::SIGXCPU) => format!(
                "compiling used more than {} CPU seconds; refused",
                request_cpu_seconds(limits)
            ),
            // Rust's allocation-failure handler says so on stderr, then aborts.
            _ if errors.contains("memory allocation") => format!(
                "compiling needed more than {} bytes (--plugin-compile-memory-limit); refused",
                limits.memory_bytes
            ),
            Some(libc::SIGKILL) => "the compile process was killed (by the system's \
                 out-of-memory killer or an operator); refused"
                .to_string(),
            _ if errors.is_empty() => format!("the compile process failed ({status}); refused"),
            _ => format!("the compile process failed: {errors}"),
        }));
    }
    artifact.map_err(|e| {
        Error::new(
            ErrorKind::Internal,
            format!("reading the compiled plugin: {e}"),
        )
    })
}

/// The child's CPU bound: compilation runs on every core, so the wall bound times the cores,
/// and only the wall deadline decides unless the child escapes it somehow.
fn request_cpu_seconds(limits: &CompileLimits) -> u64 {
    limits
        .timeout
        .as_secs()
        .max(1)
        .saturating_mul(std::thread::available_parallelism().map_or(1, |n| n.get() as u64))
}

/// The compile child: `fluss-lake-host __compile-plugin <request>`. Reads the component from
/// stdin, writes the artifact to stdout; any refusal is one line on stderr and exit code 1.
pub fn child_main(args: &[String]) -> ExitCode {
    match child(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("{why}");
            ExitCode::FAILURE
        }
    }
}

fn child(args: &[String]) -> std::result::Result<(), String> {
    use std::io::{Read, Write};
    let request: ChildRequest = args
        .get(2)
        .ok_or("no compile request")
        .and_then(|r| serde_json::from_str(r).map_err(|_| "a malformed compile request"))?;
    // Dies with the host (a crashed host leaves no compile running), dumps no core (a 4 GiB
    // address space), and stays within its address space and CPU time.
    // SAFETY: prctl(PR_SET_PDEATHSIG) and getppid touch nothing of this process's memory.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0
            || libc::getppid() == 1
        {
            return Err("the host that started this compile is gone".into());
        }
    }
    limit(libc::RLIMIT_CORE, 0)?;
    limit(libc::RLIMIT_AS, request.memory_bytes)?;
    limit(libc::RLIMIT_CPU, request.cpu_seconds)?;
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(request.max_input_bytes)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading the component: {e}"))?;
    if let Some(why) = check_structure(&bytes, &request.structure) {
        return Err(why);
    }
    let engine = super::engine::new_engine(request.perf_map)
        .map_err(|e| format!("cannot create the wasm engine: {e}"))?;
    let artifact = engine
        .precompile_component(&bytes)
        .map_err(|e| format!("not a valid component: {e:#}"))?;
    let mut out = std::io::stdout().lock();
    out.write_all(&artifact)
        .and_then(|()| out.flush())
        .map_err(|e| format!("writing the compiled plugin: {e}"))
}

/// Sets a resource limit of this process, soft and hard.
fn limit(resource: libc::__rlimit_resource_t, value: u64) -> std::result::Result<(), String> {
    let rlim = libc::rlimit {
        rlim_cur: value as libc::rlim_t,
        rlim_max: value as libc::rlim_t,
    };
    // SAFETY: setrlimit reads the struct passed by reference and touches nothing else.
    if unsafe { libc::setrlimit(resource, &rlim) } != 0 {
        return Err(format!(
            "cannot set a compile limit: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use wasm_encoder::{
        CodeSection, ConstExpr, Function, FunctionSection, GlobalSection, GlobalType, Instruction,
        Module, TypeSection, ValType,
    };

    use super::*;

    /// A core module of `functions` functions `() -> ()`, each with `locals` i32 locals and
    /// `nesting` loops one inside the other, and `globals` mutable globals.
    fn module(functions: u32, locals: u32, nesting: u32, globals: u32) -> Vec<u8> {
        let mut types = TypeSection::new();
        types.ty().function([], []);
        let mut funcs = FunctionSection::new();
        let mut code = CodeSection::new();
        for _ in 0..functions {
            funcs.function(0);
            let mut f = Function::new([(locals, ValType::I32)]);
            for _ in 0..nesting {
                f.instruction(&Instruction::Loop(wasm_encoder::BlockType::Empty));
            }
            for _ in 0..nesting {
                f.instruction(&Instruction::End);
            }
            f.instruction(&Instruction::End);
            code.function(&f);
        }
        let mut global_section = GlobalSection::new();
        for _ in 0..globals {
            global_section.global(
                GlobalType {
                    val_type: ValType::I32,
                    mutable: true,
                    shared: false,
                },
                &ConstExpr::i32_const(0),
            );
        }
        let mut m = Module::new();
        m.section(&types);
        m.section(&funcs);
        m.section(&global_section);
        m.section(&code);
        m.finish()
    }

    /// A component holding `core` as its one core module.
    fn component(core: &[u8]) -> Vec<u8> {
        let mut c = wasm_encoder::Component::new();
        c.section(&wasm_encoder::RawSection {
            id: wasm_encoder::ComponentSectionId::CoreModule as u8,
            data: core,
        });
        c.finish()
    }

    #[test]
    fn what_no_plugin_needs_is_refused_before_compiling() {
        let limits = StructureLimits::default();
        assert_eq!(
            check_structure(&component(&module(10, 10, 10, 10)), &limits),
            None
        );
        let cases = [
            (module(1, 0, 1_001, 0), "1001 nested blocks in one function"),
            (module(1, 50_001, 1, 0), "50001 locals in one function"),
            (module(1, 0, 0, 100_001), "100001 globals"),
            (module(200_001, 0, 0, 0), "200001 functions"),
        ];
        for (core, what) in cases {
            let why = check_structure(&component(&core), &limits).expect(what);
            assert!(
                why.starts_with(what) && why.ends_with("refused before compiling"),
                "{why}"
            );
        }
        // Counted over every core module of the component.
        let two = {
            let mut c = wasm_encoder::Component::new();
            for _ in 0..2 {
                c.section(&wasm_encoder::RawSection {
                    id: wasm_encoder::ComponentSectionId::CoreModule as u8,
                    data: &module(0, 0, 0, 60_000),
                });
            }
            c.finish()
        };
        assert!(check_structure(&two, &limits).is_some_and(|w| w.starts_with("120000 globals")));
    }

    /// A file that does not parse is refused before compiling: a malformed function cannot
    /// hide the functions beside it from the counts.
    #[test]
    fn a_malformed_function_cannot_hide_the_others() {
        let mut core = module(1, 0, 1_001, 0);
        // The body's last byte (its `end`) becomes an opcode that does not exist.
        let at = core.len() - 1;
        core[at] = 0xff;
        let why = check_structure(&component(&core), &StructureLimits::default()).unwrap();
        assert!(why.starts_with("not a valid component"), "{why}");
    }

    /// Through the engine (in process), a component within the limits compiles into what the
    /// engine loads, and one beyond them is refused without being compiled.
    #[tokio::test]
    async fn in_process_loads_are_checked_first() {
        let engine = super::super::engine::PluginEngine::new(Default::default()).unwrap();
        let ok = component(&module(2, 2, 2, 2));
        let loaded = engine
            .load(std::path::Path::new("ok.wasm"), &ok, "digest")
            .await
            .unwrap();
        assert_eq!(
            (loaded.structure.functions, loaded.structure.globals),
            (2, 2)
        );
        let deep = component(&module(1, 0, 1_001, 0));
        let e = match engine
            .load(std::path::Path::new("deep.wasm"), &deep, "digest")
            .await
        {
            Ok(_) => panic!("a 1001-deep function compiled"),
            Err(e) => e,
        };
        assert_eq!(e.kind(), ErrorKind::PluginLoad);
        assert!(
            e.message()
                .starts_with("deep.wasm: 1001 nested blocks in one function"),
            "{e}"
        );
    }

    /// Instances are costed per core instance: a module instantiated three times costs three
    /// times its globals.
    #[test]
    fn every_core_instance_is_costed() {
        let core = module(0, 0, 0, 1_000);
        let mut c = wasm_encoder::Component::new();
        c.section(&wasm_encoder::RawSection {
            id: wasm_encoder::ComponentSectionId::CoreModule as u8,
            data: &core,
        });
        let mut instances = wasm_encoder::InstanceSection::new();
        for _ in 0..3 {
            instances.instantiate(0, Vec::<(&str, wasm_encoder::ModuleArg)>::new());
        }
        c.section(&instances);
        let s = Structure::of(&c.finish()).unwrap();
        assert_eq!(s.core_instances, 3);
        assert_eq!(s.instance_bytes(), 3 * (1_000 * 16 + 4096));
    }
}
