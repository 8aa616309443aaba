/* A guest-instruction counter for qemu-user (a TCG plugin, plugin API
 * version 1, as Debian 12's dynamic qemu-user 7.2 loads it):
 *
 *   qemu-s390x -plugin ./qemu-count.so -d plugin -D LOG PROGRAM ARGS...
 *
 * Counts every guest instruction the process executes, in every thread,
 * and every system call it makes. At exit it writes one line to qemu's
 * log (-d plugin; -D names the file):
 *
 *   qemu-count insns I skipped K syscalls S marks M [i1 k1 s1 i2 k2 s2 ...]
 *       [csw=V/I] [nrX=C ...] [file:NAME=C ...]
 *
 * A program can mark points in its run with a system call no one else
 * makes: write(-1, NULL, MARK) with MARK = 0x51434e54 ("QCNT"). The kernel
 * answers EBADF; the plugin records the counts at each such call (i1 k1 s1
 * above: instructions, those skipped, system calls), so the difference
 * between two marks is what ran between them (workshop/benches/instructions/ops.c
 * marks its counted operations when built with -DQEMU_COUNT_MARKS). The
 * line ends with the system calls made between the first two marks by
 * number ("nr4=2": two calls of the guest's system call 4), the marks'
 * own included.
 *
 * With the argument "skip=NAME" the instructions of the library whose
 * file name contains NAME are counted apart (K above, included in I): the
 * lane's z90crypt-card interposer, which stands in for the kernel's
 * zcrypt driver, does in the guest what on a host the kernel does for one
 * ioctl. The library is found by the host address of a block's code in
 * qemu's own /proc/self/maps, where qemu-user maps the guest's files.
 *
 * With the argument "files=on" it also counts by the file the code was
 * mapped from (the program, ld.so, libc, libcrypto, a provider, libica...)
 * and ends its line with " file:NAME=C" per file: the instructions from
 * that file between the first two marks (over the whole run without
 * marks). NAME is the file's base name; code from no file is "-".
 *
 * Between the first two marks it also gives the context switches of
 * qemu's threads, which run the guest's ("csw=V/I": voluntary,
 * involuntary; from /proc/self/task, so a thread that ended in between
 * is missing).
 *
 * Counting: each translated block adds its instruction count to a total
 * when it starts to run. By default that is an inline add in the
 * translated code (cheap, but not atomic: two guest threads running at
 * the same moment can lose an add now and then); with the argument
 * "exact=on" a callback adds atomically instead (slower, exact).
 *
 * The declarations below are written from qemu's documented plugin API
 * (docs/devel/tcg-plugins, include/qemu/qemu-plugin.h of 7.2); only what
 * this plugin uses. */
#include <dirent.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* --- qemu's plugin API, version 1: the part used here -------------------- */
#define QCOUNT_EXPORT __attribute__((visibility("default")))
typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef struct {
    const char *target_name;
    struct {
        int min;
        int cur;
    } version;
    bool system_emulation;
    union {
        struct {
            int smp_vcpus;
            int max_vcpus;
        } system;
    };
} qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_syscall_cb_t)(qemu_plugin_id_t id, unsigned int vcpu_index, int64_t num,
                                              uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
                                              uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
                                              void *ptr, uint64_t imm);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
struct qemu_plugin_insn;
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
void *qemu_plugin_insn_haddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_syscall_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_syscall_cb_t cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
void qemu_plugin_outs(const char *string);
/* ------------------------------------------------------------------------- */

QCOUNT_EXPORT int qemu_plugin_version = 1;

#define MARK 0x51434e54u
#define MAX_MARKS 64

static uint64_t insns;
static uint64_t skipped;
static const char *skip;
/* The skipped library's mappings, once found. */
static uintptr_t skip_from[8], skip_to[8];
static unsigned int n_skip;
static unsigned long translations;
static uint64_t syscalls;
static bool exact;
static uint64_t marks[MAX_MARKS][3];
/* Context switches of qemu's threads (the guest's and qemu's own) at the
 * first two marks: voluntary, involuntary. */
static uint64_t switches_at_mark[2][2];
static unsigned int n_marks;
/* Counts by file (files=on): each mapping of a guest file in qemu's
 * maps, the file's index; file 0 is code from no file. */
#define MAX_FILES 48
#define MAX_RANGES 256
static bool by_file;
static char file_name[MAX_FILES][64] = {"-"};
static uint64_t file_insns[MAX_FILES];
static uint64_t file_at_mark[2][MAX_FILES];
static unsigned int n_files = 1;
static struct {
    uintptr_t from, to;
    unsigned int file;
} ranges[MAX_RANGES];
static unsigned int n_ranges;
static unsigned long misses;
/* System calls by number between the first two marks. */
#define MAX_NR 512
static uint64_t window[MAX_NR];
/* The write system call's number on the guest (4 on s390x and x86's
 * 32-bit ABI, 1 on x86_64, 64 on aarch64). */
static int64_t write_nr = 4;

static void tb_exec(unsigned int vcpu_index, void *userdata)
{
    (void)vcpu_index;
    __atomic_fetch_add(&insns, (uint64_t)(uintptr_t)userdata, __ATOMIC_RELAXED);
}

static void tb_exec_skipped(unsigned int vcpu_index, void *userdata)
{
    (void)vcpu_index;
    __atomic_fetch_add(&skipped, (uint64_t)(uintptr_t)userdata, __ATOMIC_RELAXED);
}

/* Reads the mappings of the library named by `skip` from qemu's own maps
 * (every one: qemu maps the guest's code without the host's execute
 * permission). */
static void find_skipped(void)
{
    char line[4096];
    FILE *maps = fopen("/proc/self/maps", "r");

    if (maps == NULL)
        return;
    while (n_skip < sizeof(skip_from) / sizeof(skip_from[0]) && fgets(line, sizeof(line), maps) != NULL) {
        unsigned long from, to;
        const char *path = strchr(line, '/');

        if (path == NULL || strstr(path, skip) == NULL)
            continue;
        if (sscanf(line, "%lx-%lx", &from, &to) == 2) {
            skip_from[n_skip] = (uintptr_t)from;
            skip_to[n_skip] = (uintptr_t)to;
            n_skip++;
        }
    }
    fclose(maps);
}

static bool in_skipped(struct qemu_plugin_tb *tb)
{
    uintptr_t code;
    unsigned int i;

    if (skip == NULL || qemu_plugin_tb_n_insns(tb) == 0)
        return false;
    /* Until the library is mapped, look again at each block (every 64th
     * after the first 20000, in case it never is). */
    translations++;
    if (n_skip == 0 && (translations < 20000 || translations % 64 == 0))
        find_skipped();
    code = (uintptr_t)qemu_plugin_insn_haddr(qemu_plugin_tb_get_insn(tb, 0));
    for (i = 0; i < n_skip; i++)
        if (code >= skip_from[i] && code < skip_to[i])
            return true;
    return false;
}

/* The index of the file named NAME, added if new (0 once the table is
 * full). */
static unsigned int file_index(const char *name)
{
    unsigned int i;

    for (i = 1; i < n_files; i++)
        if (strcmp(file_name[i], name) == 0)
            return i;
    if (n_files == MAX_FILES)
        return 0;
    snprintf(file_name[n_files], sizeof(file_name[0]), "%s", name);
    return n_files++;
}

/* Reads qemu's maps again: every file mapping's range and file. */
static void read_ranges(void)
{
    char line[4096];
    FILE *maps = fopen("/proc/self/maps", "r");

    if (maps == NULL)
        return;
    n_ranges = 0;
    while (n_ranges < MAX_RANGES && fgets(line, sizeof(line), maps) != NULL) {
        unsigned long from, to;
        char *path = strchr(line, '/'), *base, *end;

        if (path == NULL || sscanf(line, "%lx-%lx", &from, &to) != 2)
            continue;
        if ((end = strchr(path, '\n')) != NULL)
            *end = '\0';
        base = strrchr(path, '/') + 1;
        ranges[n_ranges].from = (uintptr_t)from;
        ranges[n_ranges].to = (uintptr_t)to;
        ranges[n_ranges].file = file_index(base);
        n_ranges++;
    }
    fclose(maps);
}

static unsigned int file_of(struct qemu_plugin_tb *tb)
{
    uintptr_t code = (uintptr_t)qemu_plugin_insn_haddr(qemu_plugin_tb_get_insn(tb, 0));
    unsigned int i, pass;

    /* A miss reads the maps again (a library loaded since), at most once
     * every 16 misses after the first 1000 (code from no file). */
    for (pass = 0; pass < 2; pass++) {
        for (i = 0; i < n_ranges; i++)
            if (code >= ranges[i].from && code < ranges[i].to)
                return ranges[i].file;
        if (pass == 0 && (++misses < 1000 || misses % 16 == 0))
            read_ranges();
        else
            break;
    }
    return 0;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    bool apart = in_skipped(tb);

    if (by_file && n > 0)
        qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &file_insns[file_of(tb)], n);

    (void)id;
    if (exact) {
        qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)n);
        if (apart)
            qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec_skipped, QEMU_PLUGIN_CB_NO_REGS,
                                                 (void *)(uintptr_t)n);
    } else {
        qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &insns, n);
        if (apart)
            qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &skipped, n);
    }
}

/* The context switches, voluntary and involuntary, of every thread of
 * this process now, from /proc/self/task/N/status. */
static void count_switches(uint64_t out[2])
{
    DIR *tasks = opendir("/proc/self/task");
    struct dirent *task;

    out[0] = out[1] = 0;
    if (tasks == NULL)
        return;
    while ((task = readdir(tasks)) != NULL) {
        char path[300], line[256];
        FILE *status;
        unsigned long long n;

        if (task->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/status", task->d_name);
        if ((status = fopen(path, "r")) == NULL)
            continue;
        while (fgets(line, sizeof(line), status) != NULL) {
            if (sscanf(line, "voluntary_ctxt_switches: %llu", &n) == 1)
                out[0] += n;
            else if (sscanf(line, "nonvoluntary_ctxt_switches: %llu", &n) == 1)
                out[1] += n;
        }
        fclose(status);
    }
    closedir(tasks);
}

static void syscall_entry(qemu_plugin_id_t id, unsigned int vcpu_index, int64_t num, uint64_t a1,
                          uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7,
                          uint64_t a8)
{
    (void)id, (void)vcpu_index, (void)a4, (void)a5, (void)a6, (void)a7, (void)a8;
    uint64_t s = __atomic_add_fetch(&syscalls, 1, __ATOMIC_RELAXED);
    if (__atomic_load_n(&n_marks, __ATOMIC_RELAXED) == 1 && num >= 0 && num < MAX_NR)
        __atomic_fetch_add(&window[num], 1, __ATOMIC_RELAXED);
    if (num == write_nr && (int32_t)a1 == -1 && a2 == 0 && (uint32_t)a3 == MARK && n_marks < MAX_MARKS) {
        marks[n_marks][0] = __atomic_load_n(&insns, __ATOMIC_RELAXED);
        marks[n_marks][1] = __atomic_load_n(&skipped, __ATOMIC_RELAXED);
        marks[n_marks][2] = s;
        if (n_marks < 2)
            count_switches(switches_at_mark[n_marks]);
        if (n_marks < 2)
            for (unsigned int f = 0; f < MAX_FILES; f++)
                file_at_mark[n_marks][f] = __atomic_load_n(&file_insns[f], __ATOMIC_RELAXED);
        __atomic_store_n(&n_marks, n_marks + 1, __ATOMIC_RELAXED);
    }
}

static void at_exit(qemu_plugin_id_t id, void *userdata)
{
    char line[96 + MAX_MARKS * 66 + MAX_NR * 28 + MAX_FILES * 96];
    size_t used;
    unsigned int i;
    int nr;

    (void)id, (void)userdata;
    used = (size_t)snprintf(line, sizeof(line),
                            "qemu-count insns %" PRIu64 " skipped %" PRIu64 " syscalls %" PRIu64 " marks %u", insns,
                            skipped, syscalls, n_marks);
    for (i = 0; i < n_marks && used < sizeof(line); i++)
        used += (size_t)snprintf(line + used, sizeof(line) - used, " %" PRIu64 " %" PRIu64 " %" PRIu64,
                                 marks[i][0], marks[i][1], marks[i][2]);
    if (n_marks >= 2 && used < sizeof(line))
        used += (size_t)snprintf(line + used, sizeof(line) - used, " csw=%" PRIu64 "/%" PRIu64,
                                 switches_at_mark[1][0] - switches_at_mark[0][0],
                                 switches_at_mark[1][1] - switches_at_mark[0][1]);
    if (n_marks >= 2)
        for (nr = 0; nr < MAX_NR && used < sizeof(line); nr++)
            if (window[nr] != 0)
                used += (size_t)snprintf(line + used, sizeof(line) - used, " nr%d=%" PRIu64, nr, window[nr]);
    for (i = 0; by_file && i < n_files && used < sizeof(line); i++) {
        uint64_t c = n_marks >= 2 ? file_at_mark[1][i] - file_at_mark[0][i] : file_insns[i];
        if (c != 0)
            used += (size_t)snprintf(line + used, sizeof(line) - used, " file:%s=%" PRIu64, file_name[i], c);
    }
    if (used + 2 <= sizeof(line)) {
        line[used] = '\n';
        line[used + 1] = '\0';
    }
    qemu_plugin_outs(line);
}

QCOUNT_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    int i;

    for (i = 0; i < argc; i++) {
        if (strcmp(argv[i], "exact=on") == 0) {
            exact = true;
        } else if (strcmp(argv[i], "files=on") == 0) {
            by_file = true;
        } else if (strncmp(argv[i], "skip=", 5) == 0 && argv[i][5] != '\0') {
            skip = argv[i] + 5;
        } else if (strcmp(argv[i], "exact=off") != 0) {
            fprintf(stderr, "qemu-count: unknown argument %s (exact=on|off, files=on, skip=NAME)\n", argv[i]);
            return -1;
        }
    }
    if (strcmp(info->target_name, "x86_64") == 0)
        write_nr = 1;
    else if (strcmp(info->target_name, "aarch64") == 0)
        write_nr = 64;
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_vcpu_syscall_cb(id, syscall_entry);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
