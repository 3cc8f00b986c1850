//! Hand-made components that cost the host at load time rather than at call time: what
//! `plugin/compile.rs` bounds. Small files, within every structural limit, that keep Cranelift
//! busy for minutes and growing in memory.

use wasm_encoder::{
    BlockType, CodeSection, Component, ComponentSectionId, ConstExpr, Function, FunctionSection,
    GlobalSection, GlobalType, Instruction, Module, RawSection, TypeSection, ValType,
};

/// A component whose one core module holds one never-called function with `locals` i32
/// locals, all read inside `nesting` loops one inside the other: SSA construction costs
/// about `locals × nesting` (the default limits allow 50 000 and 1 000).
pub fn compile_bomb(locals: u32, nesting: u32) -> Vec<u8> {
    let mut types = TypeSection::new();
    types.ty().function([], []);
    let mut funcs = FunctionSection::new();
    funcs.function(0);
    let mut f = Function::new([(locals, ValType::I32)]);
    for _ in 0..nesting {
        f.instruction(&Instruction::Loop(BlockType::Empty));
    }
    for i in 0..locals {
        f.instruction(&Instruction::LocalGet(i));
        f.instruction(&Instruction::Drop);
    }
    for _ in 0..nesting {
        f.instruction(&Instruction::End);
    }
    f.instruction(&Instruction::End);
    let mut code = CodeSection::new();
    code.function(&f);
    let mut module = Module::new();
    module.section(&types);
    module.section(&funcs);
    module.section(&code);
    component_of(&module.finish())
}

/// A component whose one core module defines `globals` mutable i32 globals and nothing else:
/// each costs the host memory in every instance, outside the instance's linear memory.
pub fn many_globals(globals: u32) -> Vec<u8> {
    let mut section = GlobalSection::new();
    for _ in 0..globals {
        section.global(
            GlobalType {
                val_type: ValType::I32,
                mutable: true,
                shared: false,
            },
            &ConstExpr::i32_const(0),
        );
    }
    let mut module = Module::new();
    module.section(&section);
    component_of(&module.finish())
}

/// A component holding `core` as its one core module.
fn component_of(core: &[u8]) -> Vec<u8> {
    let mut component = Component::new();
    component.section(&RawSection {
        id: ComponentSectionId::CoreModule as u8,
        data: core,
    });
    component.finish()
}
