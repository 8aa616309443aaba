/*
 * rustica inside OpenSSL ASYNC jobs, as an event-driven server uses them:
 *
 *   async_jobs CONFIG KEY MODE JOBS [CIPHERTEXT]
 *
 * Loads CONFIG into a library context of its own, reads the private KEY
 * (PEM) into it, and then, by MODE:
 *   jobs   starts JOBS ASYNC jobs at once, each signing its own digest
 *          (PKCS#1 v1.5, SHA-256) or, every third one, decrypting an OAEP
 *          ciphertext made beforehand; every fifth job is abandoned at its
 *          first pause (its wait context freed, the job never resumed).
 *          The others are resumed when their wait fd is readable. Every
 *          signature is verified and every decryption compared with its
 *          plaintext; then the library context is freed (rustica unloaded)
 *          while abandoned requests may still be in flight, and the
 *          process exits.
 *   sync   the same operations without jobs.
 *   linger the same as sync.
 * With LINGER_MS set (environment), the process then stays that many
 * milliseconds with rustica loaded before it ends, in every mode: time for
 * a late adapter answer to arrive and be discarded.
 *   fork   starts JOBS jobs, forks while they are paused (requests in
 *          flight), and in the child signs and verifies once outside a
 *          job and once inside a new job; the parent finishes its jobs and
 *          checks the child's exit status.
 *   keygen starts JOBS jobs at once, each generating a key of KEY's size
 *          (EVP_PKEY_generate, by rustica), then signs and verifies with
 *          every generated key outside the jobs.
 *   reject decrypts the file CIPHERTEXT with PKCS#1 v1.5 padding and
 *          implicit rejection on, once outside a job and in JOBS jobs at
 *          once; every output must be the same. Prints "sync HEX" and
 *          "async HEX" (the outputs), for the caller to compare with the
 *          default provider's.
 * Prints "threads N" (entries of /proc/self/task after the operations,
 * before teardown) and "paused N" (jobs that paused at least once).
 * Exit 0 = every result checked.
 */
#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <openssl/async.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>

#define MAX_JOBS 256

enum kind { SIGN, DECRYPT_OAEP, DECRYPT_PKCS1, KEYGEN };

struct work {
    OSSL_LIB_CTX *lib;
    EVP_PKEY *key;
    enum kind kind;
    EVP_PKEY *generated; /* KEYGEN's result */
    unsigned char in[32];
    unsigned char ct[1024];
    size_t ctlen;
    unsigned char out[1024];
    size_t outlen;
    int ok;
};

static int fail(const char *what)
{
    fprintf(stderr, "async_jobs: %s failed\n", what);
    ERR_print_errors_fp(stderr);
    return 0;
}

static void print_hex(const char *what, const unsigned char *b, size_t n)
{
    size_t i;

    printf("%s ", what);
    for (i = 0; i < n; i++)
        printf("%02x", b[i]);
    printf("\n");
}

static int threads(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;

    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static int by_rustica(EVP_PKEY_CTX *ctx)
{
    const OSSL_PROVIDER *p = EVP_PKEY_CTX_get0_provider(ctx);

    return p != NULL && strcmp(OSSL_PROVIDER_get0_name(p), "rustica") == 0;
}

/* The operation of one job (or of a plain call in sync mode). */
static int operate(struct work *w)
{
    EVP_PKEY_CTX *ctx = w->kind == KEYGEN
        ? EVP_PKEY_CTX_new_from_name(w->lib, "RSA", NULL)
        : EVP_PKEY_CTX_new_from_pkey(w->lib, w->key, NULL);
    int ok = 0;
    unsigned int implicit = 1;
    OSSL_PARAM params[] = {
        /* the name of OSSL_ASYM_CIPHER_PARAM_IMPLICIT_REJECTION (3.2+ headers) */
        OSSL_PARAM_uint("implicit-rejection", &implicit),
        OSSL_PARAM_END
    };

    w->outlen = sizeof(w->out);
    if (ctx == NULL)
        return 0;
    if (w->kind == KEYGEN) {
        ok = EVP_PKEY_keygen_init(ctx) == 1
            && EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, EVP_PKEY_get_bits(w->key)) == 1
            && EVP_PKEY_generate(ctx, &w->generated) == 1;
    } else if (w->kind == DECRYPT_OAEP) {
        ok = EVP_PKEY_decrypt_init(ctx) == 1
            && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) == 1
            && EVP_PKEY_decrypt(ctx, w->out, &w->outlen, w->ct, w->ctlen) == 1;
    } else if (w->kind == DECRYPT_PKCS1) {
        ok = EVP_PKEY_decrypt_init(ctx) == 1
            && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) == 1
            && EVP_PKEY_CTX_set_params(ctx, params) == 1
            && EVP_PKEY_decrypt(ctx, w->out, &w->outlen, w->ct, w->ctlen) == 1;
    } else {
        ok = EVP_PKEY_sign_init(ctx) == 1
            && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) == 1
            && EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) == 1
            && EVP_PKEY_sign(ctx, w->out, &w->outlen, w->in, sizeof(w->in)) == 1;
    }
    ok = ok && by_rustica(ctx);
    EVP_PKEY_CTX_free(ctx);
    w->ok = ok;
    return ok;
}

static int job_main(void *arg)
{
    return operate(*(struct work **)arg);
}

/* Checks a finished operation: the signature verifies, the decryption
 * gives the plaintext back. */
static int check(struct work *w)
{
    EVP_PKEY_CTX *ctx;
    int ok;

    if (!w->ok)
        return fail("an operation");
    if (w->kind == KEYGEN) {
        /* The generated key has the size asked for and signs verifiably. */
        struct work use;

        memset(&use, 0, sizeof(use));
        use.lib = w->lib;
        use.key = w->generated;
        use.kind = SIGN;
        memset(use.in, 0x5a, sizeof(use.in));
        ok = EVP_PKEY_get_bits(w->generated) == EVP_PKEY_get_bits(w->key)
            && operate(&use) && check(&use);
        return ok ? 1 : fail("using a generated key");
    }
    if (w->kind == DECRYPT_PKCS1)
        return 1; /* compared with the other outputs by the caller */
    if (w->kind == DECRYPT_OAEP)
        return w->outlen == sizeof(w->in) && memcmp(w->out, w->in, w->outlen) == 0
            ? 1 : fail("decryption round trip");
    ctx = EVP_PKEY_CTX_new_from_pkey(w->lib, w->key, NULL);
    ok = ctx != NULL && EVP_PKEY_verify_init(ctx) == 1
        && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) == 1
        && EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) == 1
        && EVP_PKEY_verify(ctx, w->out, w->outlen, w->in, sizeof(w->in)) == 1;
    EVP_PKEY_CTX_free(ctx);
    return ok ? 1 : fail("signature verification");
}

/* The ciphertext of reject mode, and the kind every job runs when not
 * the mixed signatures and decryptions. */
static unsigned char reject_ct[1024];
static size_t reject_ctlen;
static int all_keygen;

static int prepare(struct work *w, OSSL_LIB_CTX *lib, EVP_PKEY *key, int i)
{
    EVP_PKEY_CTX *ctx;
    int ok;

    memset(w, 0, sizeof(*w));
    w->lib = lib;
    w->key = key;
    w->kind = i % 3 == 2 ? DECRYPT_OAEP : SIGN;
    memset(w->in, i & 0xff, sizeof(w->in));
    w->in[0] = (unsigned char)(i >> 8);
    if (all_keygen) {
        w->kind = KEYGEN;
        return 1;
    }
    if (reject_ctlen > 0) {
        w->kind = DECRYPT_PKCS1;
        memcpy(w->ct, reject_ct, reject_ctlen);
        w->ctlen = reject_ctlen;
        return 1;
    }
    if (w->kind != DECRYPT_OAEP)
        return 1;
    ctx = EVP_PKEY_CTX_new_from_pkey(lib, key, NULL);
    w->ctlen = sizeof(w->ct);
    ok = ctx != NULL && EVP_PKEY_encrypt_init(ctx) == 1
        && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) == 1
        && EVP_PKEY_encrypt(ctx, w->ct, &w->ctlen, w->in, sizeof(w->in)) == 1;
    EVP_PKEY_CTX_free(ctx);
    return ok ? 1 : fail("encryption");
}

struct slot {
    ASYNC_JOB *job;
    ASYNC_WAIT_CTX *wctx;
    struct work w;
    int state; /* 0 running, 1 done, 2 abandoned */
    int paused;
};

/* Starts or resumes job i; returns 0 on error. */
static int step(struct slot *s)
{
    int ret = 0;
    struct work *wp = &s->w;

    switch (ASYNC_start_job(&s->job, s->wctx, &ret, job_main, &wp, sizeof(wp))) {
    case ASYNC_FINISH:
        s->state = 1;
        return 1;
    case ASYNC_PAUSE:
        s->paused = 1;
        return 1;
    case ASYNC_NO_JOBS:
        return 1; /* try again later */
    default:
        return fail("ASYNC_start_job");
    }
}

/* Waits up to 100 ms for job i's wait fds. */
static void wait_fds(struct slot *s)
{
    OSSL_ASYNC_FD fds[8];
    struct pollfd p[8];
    size_t n = 0, i;

    if (!ASYNC_WAIT_CTX_get_all_fds(s->wctx, NULL, &n) || n == 0 || n > 8)
        return;
    ASYNC_WAIT_CTX_get_all_fds(s->wctx, fds, &n);
    for (i = 0; i < n; i++) {
        p[i].fd = fds[i];
        p[i].events = POLLIN;
    }
    poll(p, n, 100);
}

/* Runs the slots to completion; abandons every fifth at its first pause
 * when `abandon` is set. */
static int run_slots(struct slot *slots, int jobs, int abandon)
{
    int pending = 1, i;

    while (pending) {
        pending = 0;
        for (i = 0; i < jobs; i++) {
            struct slot *s = &slots[i];

            if (s->state != 0)
                continue;
            if (abandon && i % 5 == 4 && s->paused) {
                ASYNC_WAIT_CTX_free(s->wctx);
                s->wctx = NULL;
                s->state = 2;
                continue;
            }
            if (s->job != NULL)
                wait_fds(s);
            if (!step(s))
                return 0;
            pending |= s->state == 0;
        }
    }
    return 1;
}

static int start_all(struct slot *slots, int jobs, OSSL_LIB_CTX *lib, EVP_PKEY *key)
{
    int i;

    for (i = 0; i < jobs; i++) {
        if (!prepare(&slots[i].w, lib, key, i))
            return 0;
        if ((slots[i].wctx = ASYNC_WAIT_CTX_new()) == NULL)
            return fail("ASYNC_WAIT_CTX_new");
        if (!step(&slots[i]))
            return 0;
    }
    return 1;
}

static int check_all(struct slot *slots, int jobs, int *paused)
{
    int i;
    size_t nfds;

    *paused = 0;
    for (i = 0; i < jobs; i++) {
        *paused += slots[i].paused;
        if (slots[i].state == 1 && !check(&slots[i].w))
            return 0;
        /* An application learns of a wait fd at a pause only (HAProxy adds
         * it to its poller on SSL_ERROR_WANT_ASYNC and removes every fd of
         * the wait context at close): a job that registered one must have
         * paused. */
        nfds = 0;
        if (slots[i].wctx != NULL && !slots[i].paused
            && ASYNC_WAIT_CTX_get_all_fds(slots[i].wctx, NULL, &nfds) && nfds > 0)
            return fail("a wait fd registered by a job that never paused");
    }
    return 1;
}

static int child(OSSL_LIB_CTX *lib, EVP_PKEY *key)
{
    struct work w;
    struct slot s;

    if (!prepare(&w, lib, key, 7) || !operate(&w) || !check(&w))
        return 1;
    memset(&s, 0, sizeof(s));
    if (!prepare(&s.w, lib, key, 8) || (s.wctx = ASYNC_WAIT_CTX_new()) == NULL)
        return 1;
    if (!step(&s) || !run_slots(&s, 1, 0) || !check(&s.w))
        return 1;
    ASYNC_WAIT_CTX_free(s.wctx);
    printf("child ok (paused %d)\n", s.paused);
    return 0;
}

int main(int argc, char **argv)
{
    OSSL_LIB_CTX *lib;
    EVP_PKEY *key = NULL;
    BIO *bio;
    static struct slot slots[MAX_JOBS];
    int jobs, i, paused = 0, ok = 0, nthreads;
    const char *mode;

    if (argc != 5 && argc != 6) {
        fprintf(stderr,
                "usage: async_jobs CONFIG KEY jobs|sync|linger|fork|keygen|reject JOBS [CIPHERTEXT]\n");
        return 2;
    }
    mode = argv[3];
    jobs = atoi(argv[4]);
    if (jobs < 1 || jobs > MAX_JOBS)
        return 2;
    lib = OSSL_LIB_CTX_new();
    if (lib == NULL || !OSSL_LIB_CTX_load_config(lib, argv[1]))
        return fail("loading the configuration") ? 0 : 1;
    bio = BIO_new_file(argv[2], "r");
    if (bio != NULL)
        key = PEM_read_bio_PrivateKey_ex(bio, NULL, NULL, NULL, lib, NULL);
    BIO_free(bio);
    if (key == NULL)
        return fail("reading the key") ? 0 : 1;
    all_keygen = strcmp(mode, "keygen") == 0;
    /* One signature outside any job first, as a server uses its key before
     * it serves (not in keygen mode, whose key only gives a size): the
     * key's import into rustica runs on this thread's stack, not on a
     * job's 32 KiB one (too small for it in sanitizer builds). */
    if (!all_keygen) {
        struct work warm;

        if (!prepare(&warm, lib, key, 0))
            return 1;
        warm.kind = SIGN;
        if (!operate(&warm) || !check(&warm))
            return fail("a signature outside the jobs") ? 0 : 1;
    }
    if (strcmp(mode, "reject") == 0) {
        FILE *f = argc == 6 ? fopen(argv[5], "rb") : NULL;

        if (f == NULL)
            return fail("reading the ciphertext") ? 0 : 1;
        reject_ctlen = fread(reject_ct, 1, sizeof(reject_ct), f);
        fclose(f);
        if (reject_ctlen == 0)
            return fail("reading the ciphertext") ? 0 : 1;
    }

    if (strcmp(mode, "sync") == 0 || strcmp(mode, "linger") == 0) {
        ok = 1;
        for (i = 0; i < jobs && ok; i++)
            ok = prepare(&slots[i].w, lib, key, i) && operate(&slots[i].w)
                && check(&slots[i].w);
    } else if (strcmp(mode, "keygen") == 0) {
        ok = start_all(slots, jobs, lib, key) && run_slots(slots, jobs, 0)
            && check_all(slots, jobs, &paused);
    } else if (strcmp(mode, "reject") == 0) {
        struct work sync;

        ok = prepare(&sync, lib, key, 0) && operate(&sync)
            && start_all(slots, jobs, lib, key) && run_slots(slots, jobs, 0)
            && check_all(slots, jobs, &paused);
        for (i = 0; ok && i < jobs; i++)
            if (slots[i].w.outlen != sync.outlen
                || memcmp(slots[i].w.out, sync.out, sync.outlen) != 0)
                ok = fail("the same output in every job and outside a job");
        if (ok) {
            print_hex("sync", sync.out, sync.outlen);
            print_hex("async", slots[0].w.out, slots[0].w.outlen);
        }
    } else if (strcmp(mode, "jobs") == 0) {
        ok = start_all(slots, jobs, lib, key) && run_slots(slots, jobs, 1)
            && check_all(slots, jobs, &paused);
    } else if (strcmp(mode, "fork") == 0) {
        pid_t pid;
        int status = 0;

        ok = start_all(slots, jobs, lib, key);
        fflush(stdout);
        pid = ok ? fork() : -1;
        if (pid == 0)
            { int rc = child(lib, key); fflush(stdout); _exit(rc); }
        ok = ok && pid > 0 && run_slots(slots, jobs, 0)
            && check_all(slots, jobs, &paused)
            && waitpid(pid, &status, 0) == pid;
        if (ok && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            fprintf(stderr, "async_jobs: the child failed (status %d)\n", status);
            ok = 0;
        }
    } else {
        return 2;
    }
    if (getenv("LINGER_MS") != NULL)
        usleep((useconds_t)atoi(getenv("LINGER_MS")) * 1000);
    nthreads = threads();
    printf("threads %d\npaused %d\n", nthreads, paused);

    for (i = 0; i < jobs; i++) {
        ASYNC_WAIT_CTX_free(slots[i].wctx);
        EVP_PKEY_free(slots[i].w.generated);
    }
    EVP_PKEY_free(key);
    /* Unloads rustica, possibly with abandoned requests still in flight. */
    OSSL_LIB_CTX_free(lib);
    return ok ? 0 : 1;
}
