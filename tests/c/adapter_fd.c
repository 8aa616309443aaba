/*
 * The libica adapter descriptor of a process that signs through rustica:
 *
 *   adapter_fd CONFIG DEVICE OTHER
 *
 * CONFIG loads rustica with backend = libica (the emulated libica, which
 * opens DEVICE as libica opens /dev/z90crypt: LIBICA_CRYPT_DEVICE is set to
 * it by the caller). After one signature the program finds the descriptor
 * that names DEVICE and checks that it is close-on-exec. Then two forked
 * children sign again:
 *   - "reused": the child first puts another file (OTHER) on the adapter's
 *     number, as a daemon that closed its descriptors after fork and opened
 *     a log would; after its signature that number must still name OTHER;
 *   - "inherited": the number still names the parent's adapter; after the
 *     child's signature it is closed (the child's own adapter replaces it).
 * Each child's own adapter must be close-on-exec too. Prints one line per
 * check; exit 0 = all held.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

static OSSL_LIB_CTX *lib;
static EVP_PKEY *key;

static int sign_once(void)
{
    static const unsigned char msg[] = "adapter";
    unsigned char sig[512];
    size_t siglen = sizeof(sig);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int ok = md != NULL
        && EVP_DigestSignInit_ex(md, NULL, "SHA256", lib, NULL, key, NULL) == 1
        && EVP_DigestSign(md, sig, &siglen, msg, sizeof(msg)) == 1;

    EVP_MD_CTX_free(md);
    if (!ok)
        ERR_print_errors_fp(stderr);
    return ok;
}

/* The lowest descriptor whose /proc link is path, or -1. */
static int find_fd(const char *path)
{
    char link[64], target[PATH_MAX];
    int fd;

    for (fd = 0; fd < 1024; fd++) {
        ssize_t n;

        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        n = readlink(link, target, sizeof(target) - 1);
        if (n < 0)
            continue;
        target[n] = '\0';
        if (strcmp(target, path) == 0)
            return fd;
    }
    return -1;
}

static int names(int fd, const char *path)
{
    char link[64], target[PATH_MAX];
    ssize_t n;

    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, target, sizeof(target) - 1);
    if (n < 0)
        return 0;
    target[n] = '\0';
    return strcmp(target, path) == 0;
}

static int cloexec(int fd)
{
    int flags = fcntl(fd, F_GETFD);

    return flags >= 0 && (flags & FD_CLOEXEC) != 0;
}

static int child(const char *mode, int adapter, const char *device, const char *other)
{
    int own;

    if (strcmp(mode, "reused") == 0) {
        int fd = open(other, O_RDONLY);

        if (fd < 0 || dup2(fd, adapter) != adapter)
            return 10;
        close(fd);
    }
    if (!sign_once())
        return 11;
    if (strcmp(mode, "reused") == 0) {
        if (!names(adapter, other)) {
            fprintf(stderr, "reused: descriptor %d no longer names %s\n", adapter, other);
            return 12;
        }
    } else if (fcntl(adapter, F_GETFD) >= 0 && names(adapter, device)) {
        fprintf(stderr, "inherited: the parent's adapter %d is still open\n", adapter);
        return 13;
    }
    own = find_fd(device);
    if (own < 0 || !cloexec(own)) {
        fprintf(stderr, "%s: the child's adapter (%d) is missing or not close-on-exec\n",
                mode, own);
        return 14;
    }
    return 0;
}

int main(int argc, char **argv)
{
    EVP_PKEY_CTX *gen;
    const char *modes[] = { "reused", "inherited" };
    char device[PATH_MAX], other[PATH_MAX];
    int adapter, i, bad = 0;

    if (argc != 4 || realpath(argv[2], device) == NULL || realpath(argv[3], other) == NULL) {
        fprintf(stderr, "usage: adapter_fd CONFIG DEVICE OTHER (both files must exist)\n");
        return 2;
    }
    lib = OSSL_LIB_CTX_new();
    if (lib == NULL || OSSL_LIB_CTX_load_config(lib, argv[1]) != 1) {
        ERR_print_errors_fp(stderr);
        return 1;
    }
    gen = EVP_PKEY_CTX_new_from_name(lib, "RSA", "?provider=rustica");
    if (gen == NULL || EVP_PKEY_keygen_init(gen) != 1
        || EVP_PKEY_CTX_set_rsa_keygen_bits(gen, 2048) != 1
        || EVP_PKEY_generate(gen, &key) != 1 || !sign_once()) {
        ERR_print_errors_fp(stderr);
        return 1;
    }
    EVP_PKEY_CTX_free(gen);
    adapter = find_fd(device);
    if (adapter < 0) {
        fprintf(stderr, "no descriptor names %s after a libica signature\n", device);
        return 1;
    }
    printf("adapter fd %d cloexec=%d\n", adapter, cloexec(adapter));
    if (!cloexec(adapter))
        bad = 1;
    for (i = 0; i < 2; i++) {
        int status;
        pid_t pid = fork();

        if (pid < 0)
            return 1;
        if (pid == 0)
            _exit(child(modes[i], adapter, device, other));
        if (waitpid(pid, &status, 0) != pid)
            return 1;
        printf("%s child: %s (status %d)\n", modes[i],
               WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok" : "FAILED",
               WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            bad = 1;
    }
    /* The parent's own adapter is untouched by its children. */
    if (!names(adapter, device) || !sign_once()) {
        fprintf(stderr, "the parent lost its adapter\n");
        bad = 1;
    }
    EVP_PKEY_free(key);
    OSSL_LIB_CTX_free(lib);
    return bad;
}
