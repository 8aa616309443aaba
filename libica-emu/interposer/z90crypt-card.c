/*
 * z90crypt-card: an LD_PRELOAD library that makes the shared card model
 * (rustica-card) answer a program's /dev/z90crypt, so that unmodified
 * programs (stock OpenSSL 3.2+'s own offload, Debian's libica through its
 * hardware path, the ibmca engine, rustica on the real libica) send their
 * RSA requests to one card. Built for the s390x userland and preloaded
 * under qemu-user by scripts/s390x-card.sh; a test tool, never packaged
 * (docs/card-model.md, "The kernel interface").
 *
 * It does nothing unless Z90CRYPT_CARD_SOCKET names the card's socket (an
 * absolute path): every call then goes straight to the C library.
 *
 * With the socket named:
 *   open/openat of "/dev/z90crypt" gives a descriptor of /dev/null, marked
 *   as the card's; close unmarks it. ICARSAMODEXPO and ICARSACRT on a
 *   marked descriptor send the operands to the card (one connection per
 *   request, so a forked child never shares a half-read answer) and
 *   return its result or its errno, as the kernel's ioctl does.
 *   ZCRYPT_STATUS_MASK, ZCRYPT_QDEPTH_MASK and their Z90STAT forms report
 *   the card's cards (type 0x0c, CEX6/7/8; 0x0d while offline) and their
 *   queue depth. The CCA and EP11 ioctls answer ENODEV (an accelerator
 *   has no coprocessor); others ENOTTY. dup() of a card descriptor is not
 *   followed (none of the programs above does it).
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
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#define DEVICE "/dev/z90crypt"
#define MAX_FDS 4096
#define KIND_MOD_EXPO 1
#define KIND_CRT 2
#define KIND_CONTROL 3
/* The card model refuses longer operands (wire.rs MAX_LENGTH). */
#define MAX_KEY_BYTES 1024

static volatile unsigned char card_fds[MAX_FDS];

static const char *card_socket(void)
{
    const char *path = getenv("Z90CRYPT_CARD_SOCKET");
    if (path == NULL || path[0] != '/' || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return NULL;
    return path;
}

/*
 * The C library's function NAME, looked up once: close() and open() run
 * for every descriptor the program uses. Threads racing on the first call
 * store the same pointer.
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
static void *real_open, *real_open64, *real_openat, *real_openat64, *real_close, *real_ioctl;

static int is_card_fd(int fd)
{
    return fd >= 0 && fd < MAX_FDS && card_fds[fd];
}

/* The card's descriptor: /dev/null with the caller's close-on-exec. */
static int open_card(int flags)
{
    int (*real)(const char *, int, ...) = REAL(open);
    int fd = real("/dev/null", O_RDWR | (flags & O_CLOEXEC));
    if (fd >= 0 && fd < MAX_FDS)
        card_fds[fd] = 1;
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

int close(int fd)
{
    int (*real)(int) = REAL(close);
    if (fd >= 0 && fd < MAX_FDS)
        card_fds[fd] = 0;
    return real(fd);
}

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

static int write_all(int s, const unsigned char *b, size_t n)
{
    while (n > 0) {
        ssize_t w = send(s, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int s, unsigned char *b, size_t n)
{
    while (n > 0) {
        ssize_t r = recv(s, b, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

static int connect_card(void)
{
    const char *path = card_socket();
    struct sockaddr_un addr;
    int s;

    if (path == NULL)
        return -1;
    s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    strcpy(addr.sun_path, path);
    if (connect(s, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        close(s);
        return -1;
    }
    return s;
}

/*
 * One exchange: a header (kind, pid, length) and the payload out, then
 * the card's errno and `answer_len` bytes (an RSA answer) or a length
 * and text (a control answer) back. Returns the card's errno; ENODEV when
 * no card listens, EIO when the exchange breaks.
 */
static int exchange(unsigned char kind, uint32_t length, const unsigned char *payload,
                    size_t payload_len, unsigned char *answer, size_t answer_len)
{
    unsigned char head[9], word[4];
    int s = connect_card(), rc = EIO;

    if (s < 0)
        return ENODEV;
    head[0] = kind;
    put_le32(head + 1, (uint32_t)getpid());
    put_le32(head + 5, length);
    if (write_all(s, head, sizeof(head)) != 0 || write_all(s, payload, payload_len) != 0
        || read_all(s, word, sizeof(word)) != 0)
        goto out;
    if (kind == KIND_CONTROL) {
        uint32_t n = get_le32(word);
        if (n >= answer_len)
            goto out;
        if (read_all(s, answer, n) != 0)
            goto out;
        answer[n] = 0;
        rc = 0;
    } else {
        if (read_all(s, answer, answer_len) != 0)
            goto out;
        rc = (int)get_le32(word);
    }
out:
    close(s);
    return rc;
}

/* Appends `n` bytes from the caller's buffer; EFAULT for a NULL one. */
static int append(unsigned char **at, const unsigned char *from, size_t n)
{
    if (from == NULL)
        return -1;
    memcpy(*at, from, n);
    *at += n;
    return 0;
}

/* Writes an L-byte result right-aligned into the caller's output. */
static void put_result(unsigned char *out, size_t out_len, const unsigned char *res, size_t len)
{
    memset(out, 0, out_len - len);
    memcpy(out + (out_len - len), res, len);
}

static int rsa_request(int crt, void *arg)
{
    size_t len, half, total;
    unsigned char *payload, *at, *result;
    unsigned char *out;
    size_t out_len;
    int rc;

    if (arg == NULL)
        return EFAULT;
    if (crt) {
        struct ica_rsa_modexpo_crt *r = arg;
        len = r->inputdatalength;
        out = r->outputdata;
        out_len = r->outputdatalength;
        /* The kernel's checks: an even length, room for the result. */
        if (len < 8 || len > MAX_KEY_BYTES || (len & 1) || out_len < len)
            return EINVAL;
        half = len / 2;
        total = len + 3 * (half + 8) + 2 * half;
        payload = malloc(total + len);
        if (payload == NULL)
            return ENOMEM;
        at = payload;
        if (append(&at, r->inputdata, len) || append(&at, r->np_prime, half + 8)
            || append(&at, r->nq_prime, half) || append(&at, r->bp_key, half + 8)
            || append(&at, r->bq_key, half) || append(&at, r->u_mult_inv, half + 8)) {
            free(payload);
            return EFAULT;
        }
    } else {
        struct ica_rsa_modexpo *r = arg;
        len = r->inputdatalength;
        out = r->outputdata;
        out_len = r->outputdatalength;
        if (len < 8 || len > MAX_KEY_BYTES || out_len < len)
            return EINVAL;
        total = 3 * len;
        payload = malloc(total + len);
        if (payload == NULL)
            return ENOMEM;
        at = payload;
        if (append(&at, r->inputdata, len) || append(&at, r->n_modulus, len)
            || append(&at, r->b_key, len)) {
            free(payload);
            return EFAULT;
        }
    }
    if (out == NULL) {
        free(payload);
        return EFAULT;
    }
    result = payload + total;
    rc = exchange(crt ? KIND_CRT : KIND_MOD_EXPO, (uint32_t)len, payload, total, result, len);
    if (rc == 0)
        put_result(out, out_len, result, len);
    /* The operands include private key parts. */
    explicit_bzero(payload, total + len);
    free(payload);
    return rc;
}

/* The card's "status" answer: "cards N depth D online 1 0 ...". */
static int status_mask(unsigned char *mask, size_t n, int depth_not_type)
{
    char text[512], *word, *save = NULL;
    int cards = 0, depth = 0, i = 0, rc;

    rc = exchange(KIND_CONTROL, 6, (const unsigned char *)"status", 6, (unsigned char *)text,
                  sizeof(text));
    if (rc != 0)
        return rc;
    if (sscanf(text, "cards %d depth %d online", &cards, &depth) != 2)
        return EIO;
    memset(mask, 0, n);
    word = strstr(text, "online");
    strtok_r(word, " ", &save);
    while ((word = strtok_r(NULL, " ", &save)) != NULL && i < cards && (size_t)i < n) {
        if (depth_not_type)
            mask[i] = (unsigned char)depth;
        else
            mask[i] = strcmp(word, "1") == 0 ? 0x0c : 0x0d;
        i++;
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
    if (!is_card_fd(fd) || card_socket() == NULL) {
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
