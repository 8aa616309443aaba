/*
 * Tests of the z90crypt-card interposer (z90crypt-card.c), run natively
 * on the build host by scripts/test-interposer.sh: the kernel structures
 * from the s390x UAPI header asm/zcrypt.h have the same layout on any
 * 64-bit little-endian build, and the interposer reads them in the
 * program's own layout.
 *
 *   LD_PRELOAD=libz90crypt-card.so test-z90crypt-card [TEST...]
 *
 * The real card's socket is in REAL_CARD_SOCKET (a running rustica-card);
 * the other cards are scripted here, in a forked child: one that answers
 * a fixed status line, one that answers EAGAIN, one that never answers,
 * one that listens as another uid. Each test runs in its own child
 * process with an alarm, so a crash or a hang is a failure, not the end
 * of the run. Exit status 0 when every test passed.
 */
#define _GNU_SOURCE
#include <asm/zcrypt.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEVICE "/dev/z90crypt"

static const char *real_card;
static char scratch_dir[64];
static int failures_in_test;

#define CHECK(cond, ...)                                                                    \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "    check failed (line %d): %s: ", __LINE__, #cond);           \
            fprintf(stderr, __VA_ARGS__);                                                   \
            fprintf(stderr, "\n");                                                          \
            failures_in_test++;                                                             \
        }                                                                                   \
    } while (0)

/* ---- arithmetic for the expected results (moduli below 2^64) ---- */

typedef unsigned __int128 u128;

static uint64_t mod_pow(uint64_t b, uint64_t e, uint64_t m)
{
    u128 r = 1 % m, x = b % m;
    while (e) {
        if (e & 1)
            r = r * x % m;
        x = x * x % m;
        e >>= 1;
    }
    return (uint64_t)r;
}

static uint64_t mod_inv(uint64_t a, uint64_t m)
{
    __int128 t = 0, nt = 1, r = m, nr = a % m;
    while (nr) {
        __int128 q = r / nr, tmp;
        tmp = t - q * nt;
        t = nt;
        nt = tmp;
        tmp = r - q * nr;
        r = nr;
        nr = tmp;
    }
    if (t < 0)
        t += m;
    return (uint64_t)t;
}

/* Big-endian, right-aligned in `len` bytes. */
static void put_be(unsigned char *b, size_t len, uint64_t v)
{
    memset(b, 0, len);
    for (size_t i = 0; i < len && i < 8; i++)
        b[len - 1 - i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_be(const unsigned char *b, size_t len)
{
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++)
        v = v << 8 | b[i];
    return v;
}

/* ---- requests ---- */

static int open_card(int flags)
{
    return open(DEVICE, O_RDWR | flags);
}

/*
 * An ME request of length `len` computing x^e mod n, with `out_len`
 * stated for an output buffer `out`. Returns the ioctl's result, errno in
 * *err; *stated gets outputdatalength afterwards.
 */
static int me(int fd, size_t len, uint64_t x, uint64_t e, uint64_t n, unsigned char *out,
              unsigned int out_len, unsigned int *stated, int *err)
{
    unsigned char in[1024], mod[1024], exp[1024];
    struct ica_rsa_modexpo r;
    int rc;

    put_be(in, len, x);
    put_be(mod, len, n);
    put_be(exp, len, e);
    if (len > 8)
        mod[0] = 0xc1; /* a modulus of the full length */
    memset(&r, 0, sizeof(r));
    r.inputdata = in;
    r.inputdatalength = (unsigned int)len;
    r.outputdata = out;
    r.outputdatalength = out_len;
    r.b_key = exp;
    r.n_modulus = mod;
    errno = 0;
    rc = ioctl(fd, ICARSAMODEXPO, &r);
    *err = errno;
    if (stated)
        *stated = r.outputdatalength;
    return rc;
}

/* The test key: two 32-bit primes, an 8-byte modulus. */
static const uint64_t P = 4294967291u, Q = 4294967279u, E = 65537;

static int crt(int fd, size_t len, uint64_t p, uint64_t q, uint64_t x, unsigned char *out,
               unsigned int out_len, unsigned int *stated, int *err)
{
    size_t half = (len + 1) / 2; /* the kernel's, for an odd len too */
    unsigned char in[64], np[64], nq[64], bp[64], bq[64], u[64];
    uint64_t lambda = (p - 1) / 2 * (q - 1); /* a multiple of lcm(p-1, q-1) */
    uint64_t d = mod_inv(E, lambda);
    struct ica_rsa_modexpo_crt r;
    int rc;

    put_be(in, len, x);
    /* libica's layout: p, dp and qInv with 8 bytes of padding in front. */
    put_be(np, half + 8, p);
    put_be(nq, half, q);
    put_be(bp, half + 8, d % (p - 1));
    put_be(bq, half, d % (q - 1));
    put_be(u, half + 8, mod_inv(q, p));
    memset(&r, 0, sizeof(r));
    r.inputdata = in;
    r.inputdatalength = (unsigned int)len;
    r.outputdata = out;
    r.outputdatalength = out_len;
    r.bp_key = bp;
    r.bq_key = bq;
    r.np_prime = np;
    r.nq_prime = nq;
    r.u_mult_inv = u;
    errno = 0;
    rc = ioctl(fd, ICARSACRT, &r);
    *err = errno;
    if (stated)
        *stated = r.outputdatalength;
    return rc;
}

static uint64_t crt_expected(uint64_t p, uint64_t q, uint64_t x)
{
    uint64_t lambda = (p - 1) / 2 * (q - 1);
    return mod_pow(x, mod_inv(E, lambda), p * q);
}

/* ---- scripted cards ---- */

enum fake_mode { FAKE_STATUS, FAKE_EAGAIN, FAKE_SILENT, FAKE_RECORD };

struct fake_card {
    pid_t pid;
    char path[108];
    /* [0] requests seen, [1] bytes received, [2] the last RSA length */
    volatile unsigned int *shared;
};

static int read_n(int s, unsigned char *b, size_t n)
{
    while (n > 0) {
        ssize_t r = read(s, b, n);
        if (r <= 0)
            return -1;
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

static void put_le32(unsigned char *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void fake_serve(int conn, enum fake_mode mode, const char *status, unsigned int again,
                       volatile unsigned int *shared)
{
    unsigned char head[9], buf[8192], word[4];

    for (;;) {
        ssize_t r = read(conn, buf, 1);
        if (r <= 0)
            return;
        shared[1] += (unsigned int)r;
        if (mode == FAKE_RECORD)
            continue;
        head[0] = buf[0];
        if (read_n(conn, head + 1, 8) != 0)
            return;
        uint32_t len = get_le32(head + 5), half = (len + 1) / 2, payload;
        payload = head[0] == 1 ? 3 * len : head[0] == 2 ? len + 3 * (half + 8) + 2 * half : len;
        if (payload > sizeof(buf) || read_n(conn, buf, payload) != 0)
            return;
        shared[0]++;
        if (head[0] != 3)
            shared[2] = len;
        if (mode == FAKE_SILENT) {
            pause();
            return;
        }
        if (head[0] == 3) {
            put_le32(word, (uint32_t)strlen(status));
            if (write(conn, word, 4) != 4 || write(conn, status, strlen(status)) < 0)
                return;
            continue;
        }
        put_le32(word, shared[0] <= again ? EAGAIN : 0);
        memset(buf, 0x5a, len);
        if (write(conn, word, 4) != 4 || write(conn, buf, len) != (ssize_t)len)
            return;
    }
}

/*
 * Starts a scripted card at a fresh path; `uid` >= 0 makes it listen as
 * that uid (the socket is bound first, as root, and the uid dropped before
 * listen(), which is when the kernel records the listener's credentials).
 */
static void fake_start(struct fake_card *f, enum fake_mode mode, const char *status,
                       unsigned int again, int uid)
{
    static int serial;
    struct sockaddr_un addr;
    int s, ready[2];
    char byte;

    f->shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    snprintf(f->path, sizeof(f->path), "%s/fake-%d-%d.sock", scratch_dir, (int)getpid(), serial++);
    s = socket(AF_UNIX, SOCK_STREAM, 0);
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    strcpy(addr.sun_path, f->path);
    if (bind(s, (struct sockaddr *)&addr, sizeof(addr)) != 0 || pipe(ready) != 0) {
        perror("fake card");
        exit(2);
    }
    f->pid = fork();
    if (f->pid == 0) {
        if (uid >= 0 && setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0)
            _exit(3);
        /* After the uid change, which clears it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (listen(s, 16) != 0)
            _exit(3);
        if (write(ready[1], "r", 1) != 1)
            _exit(3);
        for (;;) {
            int c = accept(s, NULL, NULL);
            if (c < 0)
                _exit(0);
            fake_serve(c, mode, status, again, f->shared);
            close(c);
        }
    }
    close(s);
    close(ready[1]);
    if (read(ready[0], &byte, 1) != 1) {
        fprintf(stderr, "fake card did not start\n");
        exit(2);
    }
    close(ready[0]);
    setenv("Z90CRYPT_CARD_SOCKET", f->path, 1);
}

static void fake_stop(struct fake_card *f)
{
    kill(f->pid, SIGKILL);
    waitpid(f->pid, NULL, 0);
    unlink(f->path);
}

static void use_real_card(void)
{
    setenv("Z90CRYPT_CARD_SOCKET", real_card, 1);
}

/* ---- the tests ---- */

/* 51.6: the result goes to the start; outputdatalength becomes its length. */
static void test_copy_out(void)
{
    unsigned char out[16];
    unsigned int stated;
    int fd, err, rc;
    uint64_t n = P * Q, x = 0x0123456789abcdefULL % n;

    use_real_card();
    fd = open_card(0);
    CHECK(fd >= 0, "open: %s", strerror(errno));

    memset(out, 0xaa, sizeof(out));
    rc = me(fd, 8, x, E, n, out, sizeof(out), &stated, &err);
    CHECK(rc == 0, "ME with room for 16: rc %d, %s", rc, strerror(err));
    CHECK(get_be(out, 8) == mod_pow(x, E, n), "ME result at the start: got %016llx want %016llx",
          (unsigned long long)get_be(out, 8), (unsigned long long)mod_pow(x, E, n));
    CHECK(out[8] == 0xaa && out[15] == 0xaa, "ME wrote past the result's 8 bytes");
    CHECK(stated == 8, "ME outputdatalength after: %u, want 8", stated);

    memset(out, 0xaa, sizeof(out));
    rc = crt(fd, 8, P, Q, x, out, sizeof(out), &stated, &err);
    CHECK(rc == 0, "CRT with room for 16: rc %d, %s", rc, strerror(err));
    CHECK(get_be(out, 8) == crt_expected(P, Q, x), "CRT result at the start: got %016llx want %016llx",
          (unsigned long long)get_be(out, 8), (unsigned long long)crt_expected(P, Q, x));
    CHECK(out[8] == 0xaa && out[15] == 0xaa, "CRT wrote past the result's 8 bytes");
    CHECK(stated == 8, "CRT outputdatalength after: %u, want 8", stated);

    /* Too small a buffer: EINVAL, outputdatalength untouched. */
    rc = me(fd, 8, x, E, n, out, 7, &stated, &err);
    CHECK(rc == -1 && err == EINVAL, "ME with room for 7: rc %d, %s", rc, strerror(err));
    CHECK(stated == 7, "outputdatalength changed on EINVAL: %u", stated);
    rc = crt(fd, 8, P, Q, x, out, 7, &stated, &err);
    CHECK(rc == -1 && err == EINVAL, "CRT with room for 7: rc %d, %s", rc, strerror(err));
    close(fd);
}

/* 51.6: a huge stated length over an 8-byte buffer before a guard page. */
static void test_huge_output_length(void)
{
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *map = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *out = map + page - 8;
    unsigned int stated;
    int fd, err, rc;
    uint64_t n = P * Q, x = 12345;

    mprotect(map + page, (size_t)page, PROT_NONE);
    use_real_card();
    fd = open_card(0);
    rc = me(fd, 8, x, E, n, out, 0x40000000u, &stated, &err);
    CHECK(rc == 0, "ME: rc %d, %s", rc, strerror(err));
    CHECK(get_be(out, 8) == mod_pow(x, E, n), "ME result");
    CHECK(stated == 8, "outputdatalength after: %u", stated);
    rc = crt(fd, 8, P, Q, x, out, 0x40000000u, &stated, &err);
    CHECK(rc == 0, "CRT: rc %d, %s", rc, strerror(err));
    CHECK(get_be(out, 8) == crt_expected(P, Q, x), "CRT result");
    CHECK(stated == 8, "outputdatalength after: %u", stated);
    close(fd);
}

/* 48.4: lengths from 1 byte; over 512 bytes ENODEV; 0 EINVAL. */
static void test_lengths(void)
{
    unsigned char out[1024];
    unsigned int stated;
    int fd, err, rc;

    use_real_card();
    fd = open_card(0);
    for (size_t len = 1; len <= 7; len++) {
        uint64_t n = len == 1 ? 251 : (1ULL << (8 * len - 1)) + 29, x = 5 % n;
        rc = me(fd, len, x, 3, n, out, (unsigned int)len, &stated, &err);
        CHECK(rc == 0, "ME of %zu bytes: rc %d, %s", len, rc, strerror(err));
        CHECK(rc != 0 || get_be(out, len) == mod_pow(x, 3, n), "ME of %zu bytes: wrong result", len);
    }
    /* CRT of 2 bytes: p = 13, q = 11. */
    rc = crt(fd, 2, 13, 11, 7, out, 2, &stated, &err);
    CHECK(rc == 0, "CRT of 2 bytes: rc %d, %s", rc, strerror(err));
    CHECK(rc != 0 || get_be(out, 2) == crt_expected(13, 11, 7), "CRT of 2 bytes: got %llu want %llu",
          (unsigned long long)get_be(out, 2), (unsigned long long)crt_expected(13, 11, 7));
    /* 48: an odd CRT length, as the kernel takes it: (3 + 1) / 2 = 2-byte
     * primes, p = 4093, q = 4091, a 3-byte modulus. */
    rc = crt(fd, 3, 4093, 4091, 7, out, 3, &stated, &err);
    CHECK(rc == 0, "CRT of 3 bytes: rc %d, %s", rc, strerror(err));
    CHECK(rc != 0 || get_be(out, 3) == crt_expected(4093, 4091, 7), "CRT of 3 bytes: got %llu want %llu",
          (unsigned long long)get_be(out, 3), (unsigned long long)crt_expected(4093, 4091, 7));
    CHECK(rc != 0 || stated == 3, "CRT of 3 bytes: outputdatalength %u", stated);
    rc = me(fd, 0, 0, 3, 0, out, 0, &stated, &err);
    CHECK(rc == -1 && err == EINVAL, "ME of 0 bytes: rc %d, %s", rc, strerror(err));
    rc = me(fd, 513, 5, 3, 0x1d, out, 1024, &stated, &err);
    CHECK(rc == -1 && err == ENODEV, "ME of 513 bytes: rc %d, %s (want ENODEV)", rc, strerror(err));
    rc = me(fd, 1024, 5, 3, 0x1d, out, 1024, &stated, &err);
    CHECK(rc == -1 && err == ENODEV, "ME of 1024 bytes: rc %d, %s (want ENODEV)", rc, strerror(err));
    close(fd);
}

/* 48: a request under 8 bytes reaches the card with its own length. */
static void test_short_frames(void)
{
    struct fake_card f;
    unsigned char out[8];
    unsigned int stated;
    int fd, err, rc;

    fake_start(&f, FAKE_STATUS, "", 0, -1);
    fd = open_card(0);
    rc = me(fd, 3, 5, 3, 0x80001d, out, 3, &stated, &err);
    CHECK(rc == 0, "ME of 3 bytes: rc %d, %s", rc, strerror(err));
    CHECK(f.shared[2] == 3, "ME of 3 bytes went to the card as %u bytes", f.shared[2]);
    rc = crt(fd, 3, 4093, 4091, 7, out, 3, &stated, &err);
    CHECK(rc == 0, "CRT of 3 bytes: rc %d, %s", rc, strerror(err));
    CHECK(f.shared[2] == 3, "CRT of 3 bytes went to the card as %u bytes", f.shared[2]);
    close(fd);
    fake_stop(&f);
}

/* 48.4: the card's EAGAIN is retried; 10 attempts, then EIO. */
static void test_eagain(void)
{
    struct fake_card f;
    unsigned char out[8];
    int fd, err, rc;

    fake_start(&f, FAKE_EAGAIN, "", 1000, -1);
    fd = open_card(0);
    rc = me(fd, 8, 5, 3, P * Q, out, 8, NULL, &err);
    CHECK(rc == -1 && err == EIO, "always EAGAIN: rc %d, %s (want EIO)", rc, strerror(err));
    CHECK(f.shared[0] == 10, "always EAGAIN: the card saw %u requests, want 10", f.shared[0]);
    fake_stop(&f);

    fake_start(&f, FAKE_EAGAIN, "", 3, -1);
    rc = crt(fd, 8, P, Q, 5, out, 8, NULL, &err);
    CHECK(rc == 0, "EAGAIN 3 times: rc %d, %s (want success)", rc, strerror(err));
    CHECK(f.shared[0] == 4, "EAGAIN 3 times: the card saw %u requests, want 4", f.shared[0]);
    fake_stop(&f);
    close(fd);
}

static int status_ioctl(int fd, unsigned long request, unsigned char *mask, int *err)
{
    int rc;
    memset(mask, 0xee, MAX_ZDEV_CARDIDS_EXT);
    errno = 0;
    rc = ioctl(fd, request, mask);
    *err = errno;
    return rc;
}

/* 48.4: QDEPTH is the card's pending count; 0 from a card without it. */
static void test_qdepth(void)
{
    struct fake_card f;
    unsigned char mask[MAX_ZDEV_CARDIDS_EXT];
    int fd, err, rc;

    fake_start(&f, FAKE_STATUS, "cards 2 depth 8 online 1 0 pending 3 0", 0, -1);
    fd = open_card(0);
    rc = status_ioctl(fd, ZCRYPT_QDEPTH_MASK, mask, &err);
    CHECK(rc == 0, "QDEPTH: rc %d, %s", rc, strerror(err));
    CHECK(mask[0] == 3 && mask[1] == 0 && mask[2] == 0, "QDEPTH: %u %u %u, want 3 0 0", mask[0],
          mask[1], mask[2]);
    rc = status_ioctl(fd, Z90STAT_QDEPTH_MASK, mask, &err);
    CHECK(rc == 0 && mask[0] == 3 && mask[1] == 0, "Z90STAT_QDEPTH: %u %u", mask[0], mask[1]);
    rc = status_ioctl(fd, ZCRYPT_STATUS_MASK, mask, &err);
    CHECK(rc == 0 && mask[0] == 0x0c && mask[1] == 0x0d && mask[2] == 0,
          "STATUS: %02x %02x %02x, want 0c 0d 00", mask[0], mask[1], mask[2]);
    fake_stop(&f);

    fake_start(&f, FAKE_STATUS, "cards 2 depth 8 online 1 1", 0, -1);
    rc = status_ioctl(fd, ZCRYPT_QDEPTH_MASK, mask, &err);
    CHECK(rc == 0 && mask[0] == 0 && mask[1] == 0, "QDEPTH without pending: %u %u, want 0 0",
          mask[0], mask[1]);
    rc = status_ioctl(fd, ZCRYPT_STATUS_MASK, mask, &err);
    CHECK(rc == 0 && mask[0] == 0x0c && mask[1] == 0x0c, "STATUS: %02x %02x", mask[0], mask[1]);
    fake_stop(&f);
    close(fd);
}

/* 51.7: a malformed status answer is an errno, never a crash. */
static void test_malformed_status(void)
{
    static const char *answers[] = {
        "cards 2 depth 8",
        "garbage",
        "",
        "cards 2 depth 8 online",
        "cards 3 depth 8 online 1",
        "cards 2 depth 8 online 1 x",
        "cards 2 depth 8 online 1 1 pending 4",
        "cards 2 depth 8 online 1 1 pending 4 z",
        "cards -1 depth 8 online",
        "cards 99999999999999999999 depth 8 online 1",
        "online 1 1",
    };
    unsigned char mask[MAX_ZDEV_CARDIDS_EXT];
    int err, rc;

    for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
        struct fake_card f;
        int fd;
        fake_start(&f, FAKE_STATUS, answers[i], 0, -1);
        fd = open_card(0);
        rc = status_ioctl(fd, ZCRYPT_STATUS_MASK, mask, &err);
        CHECK(rc == -1 && err == EIO, "status %s: rc %d, %s (want EIO)", answers[i], rc,
              strerror(err));
        rc = status_ioctl(fd, ZCRYPT_QDEPTH_MASK, mask, &err);
        CHECK(rc == -1 && err == EIO, "qdepth %s: rc %d, %s (want EIO)", answers[i], rc,
              strerror(err));
        close(fd);
        fake_stop(&f);
    }
}

static int status_works(int fd)
{
    unsigned char mask[MAX_ZDEV_CARDIDS_EXT];
    int err;
    return status_ioctl(fd, ZCRYPT_STATUS_MASK, mask, &err) == 0 && mask[0] == 0x0c;
}

/* A pipe whose read end gets `fd`'s number; FIONREAD must see its bytes. */
static int pipe_on(int fd, const char *how)
{
    int p[2], n = -1;
    if (pipe(p) != 0)
        return -1;
    if (p[0] != fd) {
        if (dup2(p[0], fd) != fd)
            return -1;
        close(p[0]);
        p[0] = fd;
    }
    if (write(p[1], "abc", 3) != 3)
        return -1;
    if (ioctl(fd, FIONREAD, &n) != 0) {
        fprintf(stderr, "    FIONREAD on a pipe at %d after %s: %s\n", fd, how, strerror(errno));
        n = -1;
    }
    close(p[1]);
    close(fd);
    return n;
}

/* 51.8: the number after close_range, closefrom, dup2; dup'd copies. */
static void test_descriptors(void)
{
    int fd, copy, n;

    use_real_card();
    fd = open_card(0);
    CHECK(status_works(fd), "the card descriptor answers");

    copy = dup(fd);
    CHECK(status_works(copy), "a dup() of the card descriptor answers");
    close(copy);
    copy = fcntl(fd, F_DUPFD_CLOEXEC, 100);
    CHECK(copy >= 100 && status_works(copy), "an F_DUPFD_CLOEXEC copy answers");
    CHECK((fcntl(copy, F_GETFD) & FD_CLOEXEC) != 0, "F_DUPFD_CLOEXEC copy is close-on-exec");
    close(copy);
    copy = dup3(fd, 101, 0);
    CHECK(copy == 101 && status_works(copy), "a dup3() copy answers");
    close(copy);
    CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) == 0, "opened without O_CLOEXEC");

    /* close_range, then the number reused by a pipe. */
    CHECK(syscall(SYS_close_range, fd, fd, 0) == 0, "close_range: %s", strerror(errno));
    n = pipe_on(fd, "close_range");
    CHECK(n == 3, "FIONREAD after close_range: %d, want 3", n);

    fd = open_card(O_CLOEXEC);
    CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0, "O_CLOEXEC honoured");
    closefrom(fd);
    n = pipe_on(fd, "closefrom");
    CHECK(n == 3, "FIONREAD after closefrom: %d, want 3", n);

    /* dup2 of another file onto the number. */
    fd = open_card(0);
    n = pipe_on(fd, "dup2"); /* pipe_on dup2()s the pipe onto fd */
    CHECK(n == 3, "FIONREAD after dup2 onto the number: %d, want 3", n);
}

/* 51.8: a forked child uses the parent's descriptor, and loses it alone. */
static void test_fork(void)
{
    int fd, status;
    pid_t pid;

    use_real_card();
    fd = open_card(0);
    pid = fork();
    if (pid == 0) {
        unsigned char out[8];
        int err, bad = 0;
        if (me(fd, 8, 7, E, P * Q, out, 8, NULL, &err) != 0 || get_be(out, 8) != mod_pow(7, E, P * Q))
            bad |= 1;
        if (syscall(SYS_close_range, fd, ~0U, 0) != 0 || pipe_on(fd, "close_range in a child") != 3)
            bad |= 2;
        _exit(bad);
    }
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status %#x (1: request, 2: reuse)",
          status);
    CHECK(status_works(fd), "the parent's descriptor still answers");
    close(fd);
}

/*
 * 51.8: exec. A close-on-exec card descriptor is gone in the new image,
 * and its number is another file's; one without it is still the card's,
 * as a real device descriptor would be.
 */
static void test_exec(void)
{
    int cloexec, kept, status;
    pid_t pid;
    char a[16], b[16];

    use_real_card();
    cloexec = open_card(O_CLOEXEC);
    kept = open_card(0);
    snprintf(a, sizeof(a), "%d", cloexec);
    snprintf(b, sizeof(b), "%d", kept);
    pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "test-z90crypt-card", "--exec-child", a, b, (char *)NULL);
        _exit(9);
    }
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "exec'd child: status %#x (1: closed number not reusable, 2: kept descriptor lost)",
          status);
    close(cloexec);
    close(kept);
}

static int exec_child(int cloexec, int kept)
{
    int bad = 0;
    if (fcntl(cloexec, F_GETFD) != -1 || errno != EBADF)
        bad |= 1;
    else if (pipe_on(cloexec, "exec") != 3)
        bad |= 1;
    if (!status_works(kept))
        bad |= 2;
    return bad;
}

/* 51.9: no request goes to a card that listens as another uid. */
static void test_peer_uid(void)
{
    struct fake_card f;
    unsigned char out[MAX_ZDEV_CARDIDS_EXT];
    int fd, err, rc;

    if (geteuid() != 0) {
        fprintf(stderr, "    skipped: needs root to run a card as another uid\n");
        return;
    }
    fake_start(&f, FAKE_RECORD, "", 0, 65534);
    fd = open_card(0);
    rc = crt(fd, 8, P, Q, 5, out, 8, NULL, &err);
    CHECK(rc == -1 && err == ENODEV, "CRT to a card of uid 65534: rc %d, %s (want ENODEV)", rc,
          strerror(err));
    usleep(100000);
    CHECK(f.shared[1] == 0, "the other uid's card received %u bytes", f.shared[1]);
    rc = status_ioctl(fd, ZCRYPT_STATUS_MASK, out, &err);
    CHECK(rc == -1 && err == ENODEV, "status from a card of uid 65534: rc %d, %s", rc, strerror(err));
    close(fd);
    fake_stop(&f);
}

/* 51.13: a card that never answers: ETIME after the timeout. */
static void test_timeout(void)
{
    struct fake_card f;
    unsigned char out[8];
    struct timespec t0, t1;
    int fd, err, rc;
    double took;

    fake_start(&f, FAKE_SILENT, "", 0, -1);
    setenv("Z90CRYPT_CARD_TIMEOUT_MS", "300", 1);
    fd = open_card(0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = me(fd, 8, 5, 3, P * Q, out, 8, NULL, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECK(rc == -1 && err == ETIME, "silent card: rc %d, %s (want ETIME)", rc, strerror(err));
    CHECK(took >= 0.25 && took < 5, "silent card: answered after %.2f s, want about 0.3", took);
    close(fd);
    fake_stop(&f);
    unsetenv("Z90CRYPT_CARD_TIMEOUT_MS");
}

struct test {
    const char *name;
    void (*run)(void);
};

static const struct test tests[] = {
    {"copy-out", test_copy_out},         {"huge-output-length", test_huge_output_length},
    {"lengths", test_lengths},           {"eagain", test_eagain},
    {"qdepth", test_qdepth},             {"malformed-status", test_malformed_status},
    {"descriptors", test_descriptors},   {"fork", test_fork},
    {"exec", test_exec},                 {"peer-uid", test_peer_uid},
    {"timeout", test_timeout},           {"short-frames", test_short_frames},
};

static int run_one(const struct test *t)
{
    int status;
    pid_t pid = fork();

    if (pid == 0) {
        alarm(20);
        failures_in_test = 0;
        t->run();
        _exit(failures_in_test ? 1 : 0);
    }
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        printf("ok   %s\n", t->name);
        return 0;
    }
    if (WIFSIGNALED(status))
        printf("FAIL %s (killed by signal %d%s)\n", t->name, WTERMSIG(status),
               WTERMSIG(status) == SIGALRM ? ": it hung" : "");
    else
        printf("FAIL %s\n", t->name);
    return 1;
}

int main(int argc, char **argv)
{
    int failed = 0, ran = 0;

    if (argc == 4 && strcmp(argv[1], "--exec-child") == 0)
        return exec_child(atoi(argv[2]), atoi(argv[3]));
    real_card = getenv("REAL_CARD_SOCKET");
    if (real_card == NULL || getenv("LD_PRELOAD") == NULL) {
        fprintf(stderr, "usage: REAL_CARD_SOCKET=... LD_PRELOAD=libz90crypt-card.so %s [TEST...]\n",
                argv[0]);
        return 2;
    }
    {
        const char *tmp = getenv("TMPDIR");
        snprintf(scratch_dir, sizeof(scratch_dir), "%s/z90crypt-test.XXXXXX",
                 tmp && strlen(tmp) < 40 ? tmp : "/tmp");
    }
    if (mkdtemp(scratch_dir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    chmod(scratch_dir, 0711); /* the other uid's card binds as root, listens as itself */
    setvbuf(stdout, NULL, _IONBF, 0);
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        int wanted = argc == 1;
        for (int a = 1; a < argc; a++)
            wanted |= strcmp(argv[a], tests[i].name) == 0;
        if (!wanted)
            continue;
        ran++;
        failed += run_one(&tests[i]);
    }
    rmdir(scratch_dir);
    printf("%d of %d interposer tests failed\n", failed, ran);
    return failed || ran == 0 ? 1 : 0;
}
