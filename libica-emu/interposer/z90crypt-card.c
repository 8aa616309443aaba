/*
 * z90crypt-card: an LD_PRELOAD library that makes the shared card model
 * (rustica-card) answer a program's /dev/z90crypt, so that unmodified
 * programs (stock OpenSSL 3.2+'s own offload, Debian's libica through its
 * hardware path, the ibmca engine, rustica on the real libica) send their
 * RSA requests to one card. Built for the s390x userland and preloaded
 * under qemu-user by scripts/s390x-card.sh; a test tool, never packaged
 * (docs/card-model.md, "The kernel interface"). Its tests:
 * test-z90crypt-card.c beside it, run by scripts/test-interposer.sh.
 *
 * It does nothing unless Z90CRYPT_CARD_SOCKET names the card's socket (an
 * absolute path): every call then goes straight to the C library.
 *
 * With the socket named:
 *   open/openat of "/dev/z90crypt" gives a real descriptor of its own: a
 *   memfd named "z90crypt-card", with the caller's O_CLOEXEC and
 *   O_NONBLOCK. A descriptor is the card's when it refers to one of those
 *   files (its st_dev/st_ino, or for one inherited across exec, its name
 *   in /proc/self/fd), so dup/dup2/dup3/F_DUPFD copies, forked children
 *   and exec without close-on-exec keep the card, and a number that was
 *   closed (close, close_range, closefrom, exec with close-on-exec) and
 *   reused is the new file's, as with the kernel's device.
 *   ICARSAMODEXPO and ICARSACRT on a card descriptor apply the kernel's
 *   checks, send the operands to the card (one connection per request, so
 *   a forked child never shares a half-read answer) and return its
 *   result or its errno, as the kernel's ioctl does (the rules and their
 *   kernel sources are at rsa_request()).
 *   ZCRYPT_STATUS_MASK, ZCRYPT_QDEPTH_MASK and their Z90STAT forms report
 *   the card's cards (type 0x0c, CEX6/7/8; 0x0d while offline) and the
 *   requests each holds now. The CCA and EP11 ioctls answer ENODEV (an
 *   accelerator has no coprocessor); others ENOTTY.
 *   Nothing is sent to a card that runs as another uid than the process's
 *   effective uid or root (SO_PEERCRED): the request fails with ENODEV.
 *
 * The structures are read in the program's own (big-endian) layout, since
 * this library runs inside it; the frames to the card are little-endian,
 * as libica-emu/src/wire.rs defines them.
 */
#define _GNU_SOURCE
#include <asm/zcrypt.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define DEVICE "/dev/z90crypt"
#define CARD_FILE_NAME "z90crypt-card"
#define KIND_MOD_EXPO 1
#define KIND_CRT 2
#define KIND_CONTROL 3
/*
 * The kernel's numbers (drivers/s390/crypto):
 * - MAX_MOD_BYTES: CEX4A_MAX_MOD_SIZE_4K in zcrypt_cex4.c, the largest
 *   operand of a CEX4..8 accelerator; zcrypt_api.c skips every card whose
 *   max_mod_size is smaller and answers ENODEV when none is left.
 * - AGAIN_MAX: TRACK_AGAIN_MAX in zcrypt_api.h; the ioctl tries a request
 *   that many times while it gets EAGAIN, then answers EIO.
 * - TIMEOUT_MS: CEX4_CLEANUP_TIME (900 * HZ) in zcrypt_cex4.c, the AP
 *   queue's request timeout.
 */
#define MAX_MOD_BYTES 512
#define AGAIN_MAX 10
#define TIMEOUT_MS (900L * 1000)
/* The card model's shortest frame (rustica-card takes 8 bytes and up). */
#define WIRE_MIN_BYTES 8
/* Card descriptors' files remembered by inode; older ones by name. */
#define CARD_FILES 64

static const char *card_socket(void)
{
    const char *path = getenv("Z90CRYPT_CARD_SOCKET");
    if (path == NULL || path[0] != '/' || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return NULL;
    return path;
}

/*
 * The C library's function NAME, looked up once: open() runs for every
 * file the program opens. Threads racing on the first call store the
 * same pointer.
 */
static void *next(void **slot, const char *name)
{
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (f == NULL) {
        f = dlsym(RTLD_NEXT, name);
        __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    }
    return f;
}
#define REAL(name) next(&real_##name, #name)
static void *real_open, *real_open64, *real_openat, *real_openat64, *real_ioctl;

/* ---- the card's descriptors ---- */

static struct {
    dev_t dev;
    ino_t ino;
} card_files[CARD_FILES];
static unsigned int card_file_next;
static pthread_mutex_t card_files_lock = PTHREAD_MUTEX_INITIALIZER;

static void remember_card_file(const struct stat *st)
{
    pthread_mutex_lock(&card_files_lock);
    card_files[card_file_next % CARD_FILES].dev = st->st_dev;
    card_files[card_file_next % CARD_FILES].ino = st->st_ino;
    card_file_next++;
    pthread_mutex_unlock(&card_files_lock);
}

static int known_card_file(const struct stat *st)
{
    int found = 0;
    pthread_mutex_lock(&card_files_lock);
    for (unsigned int i = 0; i < CARD_FILES && i < card_file_next; i++)
        if (card_files[i].dev == st->st_dev && card_files[i].ino == st->st_ino)
            found = 1;
    pthread_mutex_unlock(&card_files_lock);
    return found;
}

/*
 * A memfd's name shows in its /proc/self/fd link as "/memfd:NAME
 * (deleted)": how a card descriptor inherited across exec (which empties
 * the table above) is still known.
 */
static int named_card_file(int fd)
{
    static const char want[] = "/memfd:" CARD_FILE_NAME " (deleted)";
    char link[40], target[sizeof(want) + 1];
    ssize_t n;

    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, target, sizeof(target));
    return n == (ssize_t)sizeof(want) - 1 && memcmp(target, want, sizeof(want) - 1) == 0;
}

static int is_card_fd(int fd)
{
    struct stat st;

    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    if (known_card_file(&st))
        return 1;
    if (!named_card_file(fd))
        return 0;
    remember_card_file(&st);
    return 1;
}

/*
 * The card's descriptor: a memfd of its own, so that its number stays
 * taken until every copy is closed and its inode is nobody else's.
 */
static int open_card(int flags)
{
    struct stat st;
    int fd = memfd_create(CARD_FILE_NAME, (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);

    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || ((flags & O_NONBLOCK) && fcntl(fd, F_SETFL, O_NONBLOCK) != 0)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    remember_card_file(&st);
    return fd;
}

static int wants_card(const char *path)
{
    return path != NULL && strcmp(path, DEVICE) == 0 && card_socket() != NULL;
}

#define OPEN_MODE(flags, mode)                                    \
    do {                                                          \
        if ((flags) & (O_CREAT | __O_TMPFILE)) {                  \
            va_list ap;                                           \
            va_start(ap, flags);                                  \
            mode = va_arg(ap, mode_t);                            \
            va_end(ap);                                           \
        }                                                         \
    } while (0)

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    OPEN_MODE(flags, mode);
    if (wants_card(path))
        return open_card(flags);
    int (*real)(const char *, int, ...) = REAL(open);
    return real(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;
    OPEN_MODE(flags, mode);
    if (wants_card(path))
        return open_card(flags);
    int (*real)(const char *, int, ...) = REAL(open64);
    return real(path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;
    OPEN_MODE(flags, mode);
    if (wants_card(path))
        return open_card(flags);
    int (*real)(int, const char *, int, ...) = REAL(openat);
    return real(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;
    OPEN_MODE(flags, mode);
    if (wants_card(path))
        return open_card(flags);
    int (*real)(int, const char *, int, ...) = REAL(openat64);
    return real(dirfd, path, flags, mode);
}

/* The fortified forms glibc's headers use when the mode is not given. */
int __open_2(const char *path, int flags)
{
    return open(path, flags);
}

int __open64_2(const char *path, int flags)
{
    return open64(path, flags);
}

/* ---- the exchange with the card ---- */

static void put_le32(unsigned char *b, uint32_t v)
{
    b[0] = v & 0xff;
    b[1] = (v >> 8) & 0xff;
    b[2] = (v >> 16) & 0xff;
    b[3] = (v >> 24) & 0xff;
}

static uint32_t get_le32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/*
 * How long a request may wait for the card: the kernel's request timeout.
 * Z90CRYPT_CARD_TIMEOUT_MS shortens it for tests; secure_getenv ignores
 * it in a setuid or otherwise privileged (AT_SECURE) process.
 */
static long timeout_ms(void)
{
    const char *v = secure_getenv("Z90CRYPT_CARD_TIMEOUT_MS");
    char *end;
    long t;

    if (v == NULL || *v == 0)
        return TIMEOUT_MS;
    errno = 0;
    t = strtol(v, &end, 10);
    if (errno != 0 || *end != 0 || t <= 0 || t > TIMEOUT_MS)
        return TIMEOUT_MS;
    return t;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until `s` is ready for `events`; ETIME at the deadline. */
static int wait_ready(int s, short events, long long deadline)
{
    for (;;) {
        struct pollfd p = {.fd = s, .events = events};
        long long left = deadline - now_ms();
        int n;

        if (left <= 0)
            return ETIME;
        n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return EIO;
    }
}

static int write_all(int s, const unsigned char *b, size_t n, long long deadline)
{
    while (n > 0) {
        int rc = wait_ready(s, POLLOUT, deadline);
        ssize_t w;
        if (rc != 0)
            return rc;
        w = send(s, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (w <= 0)
            return EIO;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int s, unsigned char *b, size_t n, long long deadline)
{
    while (n > 0) {
        int rc = wait_ready(s, POLLIN, deadline);
        ssize_t r;
        if (rc != 0)
            return rc;
        r = recv(s, b, n, MSG_DONTWAIT);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0)
            return EIO;
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

/*
 * A connection to the card, or -1 with *rc set: ENODEV when none listens
 * or when it runs as another uid than ours (other than root), which must
 * not see the key.
 */
static int connect_card(int *rc)
{
    const char *path = card_socket();
    struct sockaddr_un addr;
    struct ucred peer;
    socklen_t peer_len = sizeof(peer);
    int s;

    *rc = ENODEV;
    if (path == NULL)
        return -1;
    s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    strcpy(addr.sun_path, path);
    if (connect(s, (struct sockaddr *)&addr, sizeof(addr)) != 0
        || getsockopt(s, SOL_SOCKET, SO_PEERCRED, &peer, &peer_len) != 0
        || peer_len != sizeof(peer) || (peer.uid != 0 && peer.uid != geteuid())) {
        close(s);
        return -1;
    }
    *rc = 0;
    return s;
}

/*
 * One exchange: a header (kind, pid, length) and the payload out, then
 * the card's errno and `answer_len` bytes (an RSA answer) or a length
 * and text (a control answer) back. Returns the card's errno; ENODEV when
 * no card (of ours) listens, ETIME when it does not answer in time, EIO
 * when the exchange breaks.
 */
static int exchange(unsigned char kind, uint32_t length, const unsigned char *payload,
                    size_t payload_len, unsigned char *answer, size_t answer_len)
{
    long long deadline = now_ms() + timeout_ms();
    unsigned char head[9], word[4];
    int rc, s = connect_card(&rc);

    if (s < 0)
        return rc;
    head[0] = kind;
    put_le32(head + 1, (uint32_t)getpid());
    put_le32(head + 5, length);
    if ((rc = write_all(s, head, sizeof(head), deadline)) != 0
        || (rc = write_all(s, payload, payload_len, deadline)) != 0
        || (rc = read_all(s, word, sizeof(word), deadline)) != 0)
        goto out;
    if (kind == KIND_CONTROL) {
        uint32_t n = get_le32(word);
        rc = EIO;
        if (n >= answer_len || (rc = read_all(s, answer, n, deadline)) != 0)
            goto out;
        answer[n] = 0;
    } else {
        if ((rc = read_all(s, answer, answer_len, deadline)) != 0)
            goto out;
        rc = (int)get_le32(word);
    }
out:
    close(s);
    return rc;
}

/* ---- ICARSAMODEXPO and ICARSACRT ---- */

/*
 * Appends `n` bytes from the caller's buffer right-aligned in `width`
 * (zeros before them); -1 for a NULL buffer.
 */
static int append(unsigned char **at, const unsigned char *from, size_t n, size_t width)
{
    if (from == NULL)
        return -1;
    memset(*at, 0, width - n);
    memcpy(*at + (width - n), from, n);
    *at += width;
    return 0;
}

/*
 * The kernel's rules (drivers/s390/crypto), in its order:
 * - zcrypt_api.c (zcrypt_rsa_modexpo, zcrypt_rsa_crt): outputdatalength
 *   below inputdatalength is EINVAL; otherwise the request's
 *   outputdatalength becomes inputdatalength, "the number of bytes we
 *   will copy in any case".
 * - zcrypt_msgtype50.c (get_rsa_modex_fc, get_rsa_crt_fc): a length of 0
 *   is EINVAL; any other is taken, from 1 byte.
 * - zcrypt_api.c: no card takes more than its max_mod_size (512 bytes for
 *   CEX4..8, zcrypt_cex4.c): ENODEV.
 * - zcrypt_msgtype50.c (convert_type80): the result, outputdatalength
 *   (= inputdatalength) bytes, is copied to the start of outputdata and
 *   nothing after it is written.
 * - zcrypt_api.c (icarsamodexpo_ioctl, icarsacrt_ioctl): EAGAIN is tried
 *   again, TRACK_AGAIN_MAX (10) attempts in all, then EIO; on success,
 *   outputdatalength is written back to the caller's structure.
 * Not as the kernel: an odd CRT length is EINVAL here (the kernel takes
 * (L + 1) / 2 bytes of each prime; the card's frame has L / 2).
 * The card's frames start at 8 bytes (WIRE_MIN_BYTES): a shorter request
 * travels zero-extended to 8, which leaves every number's value as it is;
 * its result is the last L bytes of the card's 8.
 */
static int rsa_request(int crt, void *arg)
{
    size_t len, half, wire, wire_half, total;
    unsigned char *payload, *at, *result, *out;
    unsigned int *out_len;
    int rc, attempt;

    if (arg == NULL)
        return EFAULT;
    if (crt) {
        struct ica_rsa_modexpo_crt *r = arg;
        len = r->inputdatalength;
        out = (unsigned char *)r->outputdata;
        out_len = &r->outputdatalength;
    } else {
        struct ica_rsa_modexpo *r = arg;
        len = r->inputdatalength;
        out = (unsigned char *)r->outputdata;
        out_len = &r->outputdatalength;
    }
    if (*out_len < len || len == 0)
        return EINVAL;
    if (len > MAX_MOD_BYTES)
        return ENODEV;
    if (crt && (len & 1))
        return EINVAL;
    wire = len < WIRE_MIN_BYTES ? WIRE_MIN_BYTES : len;
    half = len / 2;
    wire_half = wire / 2;
    total = crt ? wire + 3 * (wire_half + 8) + 2 * wire_half : 3 * wire;
    payload = malloc(total + wire);
    if (payload == NULL)
        return ENOMEM;
    at = payload;
    if (crt) {
        struct ica_rsa_modexpo_crt *r = arg;
        rc = append(&at, (const unsigned char *)r->inputdata, len, wire)
             || append(&at, (const unsigned char *)r->np_prime, half + 8, wire_half + 8)
             || append(&at, (const unsigned char *)r->nq_prime, half, wire_half)
             || append(&at, (const unsigned char *)r->bp_key, half + 8, wire_half + 8)
             || append(&at, (const unsigned char *)r->bq_key, half, wire_half)
             || append(&at, (const unsigned char *)r->u_mult_inv, half + 8, wire_half + 8);
    } else {
        struct ica_rsa_modexpo *r = arg;
        rc = append(&at, (const unsigned char *)r->inputdata, len, wire)
             || append(&at, (const unsigned char *)r->n_modulus, len, wire)
             || append(&at, (const unsigned char *)r->b_key, len, wire);
    }
    if (rc != 0 || out == NULL) {
        rc = EFAULT;
        goto out;
    }
    result = payload + total;
    for (attempt = 1;; attempt++) {
        rc = exchange(crt ? KIND_CRT : KIND_MOD_EXPO, (uint32_t)wire, payload, total, result, wire);
        if (rc != EAGAIN || attempt >= AGAIN_MAX)
            break;
    }
    if (rc == EAGAIN)
        rc = EIO;
    if (rc == 0) {
        memcpy(out, result + (wire - len), len);
        *out_len = (unsigned int)len;
    }
out:
    /* The operands include private key parts. */
    explicit_bzero(payload, total + wire);
    free(payload);
    return rc;
}

/* ---- the status ioctls ---- */

/* The next space-separated word of *p: its start, and its length in *n. */
static const char *next_word(const char **p, size_t *n)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\n')
        s++;
    *p = s;
    while (**p != 0 && **p != ' ' && **p != '\n')
        (*p)++;
    *n = (size_t)(*p - s);
    return s;
}

static int is_word(const char **p, const char *want)
{
    size_t n;
    const char *w = next_word(p, &n);
    return n == strlen(want) && memcmp(w, want, n) == 0;
}

/* A decimal number of at most 9 digits; -1 for anything else. */
static long number_word(const char **p)
{
    size_t n;
    const char *w = next_word(p, &n);
    long v = 0;

    if (n == 0 || n > 9)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (w[i] < '0' || w[i] > '9')
            return -1;
        v = v * 10 + (w[i] - '0');
    }
    return v;
}

/*
 * The card's "status" answer: "cards N depth D online O1 ... ON", and
 * from newer cards " pending P1 ... PN" after it (each card's requests
 * queued and in service now; 0 when the card does not say). Fills
 * `mask` (n entries, zero past the cards) with each card's type or its
 * count, as the kernel's zcrypt_status_mask and zcrypt_qdepth_mask do.
 * A malformed answer is EIO.
 */
static int status_mask(unsigned char *mask, size_t n, int depth_not_type)
{
    char text[1024];
    const char *p = text, *mark;
    long cards, value;
    int rc;

    rc = exchange(KIND_CONTROL, 6, (const unsigned char *)"status", 6, (unsigned char *)text,
                  sizeof(text));
    if (rc != 0)
        return rc;
    if (!is_word(&p, "cards") || (cards = number_word(&p)) < 1 || !is_word(&p, "depth")
        || number_word(&p) < 0 || !is_word(&p, "online"))
        return EIO;
    memset(mask, 0, n);
    for (long i = 0; i < cards; i++) {
        size_t len;
        const char *w = next_word(&p, &len);
        if (len != 1 || (w[0] != '0' && w[0] != '1'))
            return EIO;
        if (!depth_not_type && (size_t)i < n)
            mask[i] = w[0] == '1' ? 0x0c : 0x0d;
    }
    mark = p;
    if (!is_word(&p, "pending")) {
        size_t len;
        p = mark;
        next_word(&p, &len);
        return len == 0 ? 0 : EIO;
    }
    for (long i = 0; i < cards; i++) {
        if ((value = number_word(&p)) < 0)
            return EIO;
        if (depth_not_type && (size_t)i < n)
            mask[i] = (unsigned char)(value > 255 ? 255 : value);
    }
    return 0;
}

int ioctl(int fd, unsigned long request, ...)
{
    va_list ap;
    void *arg;
    int rc;

    va_start(ap, request);
    arg = va_arg(ap, void *);
    va_end(ap);
    if (card_socket() == NULL || !is_card_fd(fd)) {
        int (*real)(int, unsigned long, ...) = REAL(ioctl);
        return real(fd, request, arg);
    }
    switch (request) {
    case ICARSAMODEXPO:
        rc = rsa_request(0, arg);
        break;
    case ICARSACRT:
        rc = rsa_request(1, arg);
        break;
    case ZCRYPT_STATUS_MASK:
        rc = arg ? status_mask(arg, MAX_ZDEV_CARDIDS_EXT, 0) : EFAULT;
        break;
    case Z90STAT_STATUS_MASK:
        rc = arg ? status_mask(arg, 64, 0) : EFAULT;
        break;
    case ZCRYPT_QDEPTH_MASK:
        rc = arg ? status_mask(arg, MAX_ZDEV_CARDIDS_EXT, 1) : EFAULT;
        break;
    case Z90STAT_QDEPTH_MASK:
        rc = arg ? status_mask(arg, 64, 1) : EFAULT;
        break;
    case ZSECSENDCPRB:
    case ZSENDEP11CPRB:
        rc = ENODEV;
        break;
    default:
        rc = ENOTTY;
        break;
    }
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return 0;
}
