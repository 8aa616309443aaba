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
 * Three files, one library, each using only the ones below it (checked
 * by scripts/check-layers.py): z90crypt-card.c (this one: the
 * descriptors, open and ioctl), z90crypt-requests.c (the RSA and status
 * ioctls' rules) and z90crypt-exchange.c (the card's socket and the frames
 * to and from it); z90crypt-card.h holds what they share. Build them
 * together:
 *   gcc -shared -fPIC -o libz90crypt-card.so z90crypt-card.c \
 *       z90crypt-exchange.c z90crypt-requests.c -ldl
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
 * as testbed/card/src/wire.rs defines them.
 */
#include "z90crypt-card.h"

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
