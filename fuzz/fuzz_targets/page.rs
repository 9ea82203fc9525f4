//! Fuzz the ring-buffer page decoder through `RawDecoder::decode_page` (64- and 32-bit layouts), the
//! `raw_syscalls` plan, a format parsed at its first record and kernel stacks included.
#![no_main]

use latscope_decode::{PageLayout, RawDecoder};
use latscope_model::CpuId;
use libfuzzer_sys::fuzz_target;

const SWITCH: &str = "name: sched_switch\nID: 1\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n";

const PRINT: &str = "name: print\nID: 2\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n\
\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;\n";

const BPRINT: &str = "name: bprint\nID: 3\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n\
\tfield:const char * fmt;\toffset:16;\tsize:8;\tsigned:0;\n\
\tfield:u32 buf[];\toffset:24;\tsize:0;\tsigned:0;\n";

const DYN: &str = "name: irq_handler_entry\nID: 4\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n\
\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n";

const SYS_ENTER: &str = "name: sys_enter\nID: 5\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;\n";

const SYS_EXIT: &str = "name: sys_exit\nID: 6\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield:long ret;\toffset:16;\tsize:8;\tsigned:1;\n";

/// `ftrace:kernel_stack`: `size` frames in a `caller` array the record extends past its declared 8.
const STACK: &str = "name: kernel_stack\nID: 7\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\tfield:int size;\toffset:8;\tsize:4;\tsigned:1;\n\
\tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;\n";

fuzz_target!(|data: &[u8]| {
    let Some((&mode, page)) = data.split_first() else { return };
    let layout = PageLayout::default_for(if mode & 1 == 0 { 8 } else { 4 }, mode & 2 != 0);
    let mut dec = RawDecoder::with_layout(layout);
    for f in [SWITCH, PRINT, BPRINT, DYN] {
        let _ = dec.add_format("sched", f);
    }
    // raw_syscalls go through their plan; sys_exit is parsed when its first record comes.
    let _ = dec.add_format("raw_syscalls", SYS_ENTER);
    let _ = dec.add_format_later("raw_syscalls", SYS_EXIT.to_string());
    let _ = dec.add_format("ftrace", STACK);
    dec.set_printk_formats("0x0 : \"%d %s %pS %llx %c %5.2x\\n\"\n");
    dec.set_kallsyms("0000000000001000 T a\n0000000000002000 t b\n");
    let mut n = 0usize;
    let _ = dec.decode_page(CpuId(0), page, &mut |_| n += 1);
});
