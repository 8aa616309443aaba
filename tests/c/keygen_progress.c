/*
 * RSA key generation's progress callback (EVP_PKEY_CTX_set_cb), rustica
 * against the default provider:
 *
 *   keygen_progress CONFIG PROPQ BITS E-HEX count|cancel [job]
 *
 * CONFIG loads the default provider and rustica; the generation fetches
 * with PROPQ ("?provider=rustica" or "?provider=default"), directly or,
 * with "job", inside an ASYNC job (resumed until it finishes, waiting on
 * its wait fds while it pauses).
 *
 * count: a callback that continues at every event. Prints
 *   "ok PROVIDER BITS"
 *   "events KINDS"   every event's kind (EVP_PKEY_CTX_get_keygen_info 0)
 *                    in order, as genpkey draws them: 0 '.', 1 '+',
 *                    2 '*', 3 '|' (genpkey prints a newline)
 *   "primes I,I"     the iteration value of each event 3
 *   "thread caller|other"  whether every event came on the calling thread
 *
 * cancel: a callback that returns 0 at the first event 1 (a Miller-Rabin
 * round passed). Prints
 *   "generate returns R"   what EVP_PKEY_generate returned
 *   "errors REASON|..."    the error queue's reasons, oldest first (or
 *                          "errors none"): the texts, as libraries differ
 *   "after-cancel N"       events delivered after the callback said stop
 *   "key none|some"        whether a key came back
 *   "thread caller|other"
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/async.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>

#define MAX_EVENTS (1 << 20)

static char kinds[MAX_EVENTS + 1];
static size_t nkinds;
static int primes[16];
static size_t nprimes;
static int cancel_mode;
static int cancelled;
static long after_cancel;
static pthread_t caller;
static int other_thread;

static int progress(EVP_PKEY_CTX *ctx)
{
    int kind = EVP_PKEY_CTX_get_keygen_info(ctx, 0);
    int iteration = EVP_PKEY_CTX_get_keygen_info(ctx, 1);

    if (!pthread_equal(pthread_self(), caller))
        other_thread = 1;
    if (cancelled) {
        after_cancel++;
        return 0;
    }
    if (nkinds < MAX_EVENTS)
        kinds[nkinds++] = kind == 0 ? '.' : kind == 1 ? '+' : kind == 2 ? '*'
            : kind == 3 ? '|' : '?';
    if (kind == 3 && nprimes < sizeof(primes) / sizeof(primes[0]))
        primes[nprimes++] = iteration;
    if (cancel_mode && kind == 1) {
        cancelled = 1;
        return 0;
    }
    return 1;
}

struct gen {
    OSSL_LIB_CTX *lib;
    const char *propq;
    size_t bits;
    BIGNUM *e;
    EVP_PKEY *key;
    int ret;
    char provider[64];
};

static int generate(struct gen *g)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(g->lib, "RSA", g->propq);
    const OSSL_PROVIDER *p;

    g->ret = -100;
    if (ctx == NULL || EVP_PKEY_keygen_init(ctx) != 1
        || EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, (int)g->bits) != 1
        || EVP_PKEY_CTX_set1_rsa_keygen_pubexp(ctx, g->e) != 1) {
        EVP_PKEY_CTX_free(ctx);
        return 0;
    }
    p = EVP_PKEY_CTX_get0_provider(ctx);
    snprintf(g->provider, sizeof(g->provider), "%s",
             p != NULL ? OSSL_PROVIDER_get0_name(p) : "none");
    EVP_PKEY_CTX_set_cb(ctx, progress);
    g->ret = EVP_PKEY_generate(ctx, &g->key);
    EVP_PKEY_CTX_free(ctx);
    return 1;
}

static int job_main(void *arg)
{
    return generate(*(struct gen **)arg);
}

/* The generation inside one ASYNC job, resumed until it finishes. */
static int in_job(struct gen *g)
{
    ASYNC_JOB *job = NULL;
    ASYNC_WAIT_CTX *wctx = ASYNC_WAIT_CTX_new();
    struct gen *arg = g;
    int ret = 0;

    if (wctx == NULL)
        return 0;
    for (;;) {
        switch (ASYNC_start_job(&job, wctx, &ret, job_main, &arg, sizeof(arg))) {
        case ASYNC_FINISH:
            ASYNC_WAIT_CTX_free(wctx);
            return ret;
        case ASYNC_PAUSE: {
            OSSL_ASYNC_FD fds[8];
            struct pollfd pfd[8];
            size_t n = 0, i;

            if (ASYNC_WAIT_CTX_get_all_fds(wctx, NULL, &n) && n > 0 && n <= 8) {
                ASYNC_WAIT_CTX_get_all_fds(wctx, fds, &n);
                for (i = 0; i < n; i++) {
                    pfd[i].fd = fds[i];
                    pfd[i].events = POLLIN;
                }
                poll(pfd, n, 100);
            }
            break;
        }
        default:
            fprintf(stderr, "ASYNC_start_job failed\n");
            ASYNC_WAIT_CTX_free(wctx);
            return 0;
        }
    }
}

static void print_errors(void)
{
    unsigned long e;
    int any = 0;

    printf("errors ");
    while ((e = ERR_get_error()) != 0) {
        const char *r = ERR_reason_error_string(e);

        if (r != NULL)
            printf("%s%s", any ? "|" : "", r);
        else
            printf("%sreason %d", any ? "|" : "", ERR_GET_REASON(e));
        any = 1;
    }
    printf("%s\n", any ? "" : "none");
}

int main(int argc, char **argv)
{
    struct gen g;
    int in_a_job;

    if (argc < 6 || argc > 7) {
        fprintf(stderr, "usage: keygen_progress CONFIG PROPQ BITS E-HEX count|cancel [job]\n");
        return 2;
    }
    memset(&g, 0, sizeof(g));
    caller = pthread_self();
    cancel_mode = strcmp(argv[5], "cancel") == 0;
    in_a_job = argc == 7 && strcmp(argv[6], "job") == 0;
    g.lib = OSSL_LIB_CTX_new();
    g.propq = argv[2];
    g.bits = strtoul(argv[3], NULL, 10);
    if (g.lib == NULL || !OSSL_LIB_CTX_load_config(g.lib, argv[1])
        || !BN_hex2bn(&g.e, argv[4])) {
        ERR_print_errors_fp(stderr);
        return 2;
    }
    if (!(in_a_job ? in_job(&g) : generate(&g))) {
        fprintf(stderr, "could not run the generation\n");
        ERR_print_errors_fp(stderr);
        return 2;
    }
    if (cancel_mode) {
        printf("generate returns %d\n", g.ret);
        print_errors();
        printf("after-cancel %ld\n", after_cancel);
        printf("key %s\n", g.key != NULL ? "some" : "none");
    } else {
        size_t i;

        if (g.ret == 1 && g.key != NULL)
            printf("ok %s %d\n", g.provider, EVP_PKEY_get_bits(g.key));
        else
            printf("generate fails: %d\n", g.ret);
        kinds[nkinds] = 0;
        printf("events %s\n", kinds);
        printf("primes ");
        for (i = 0; i < nprimes; i++)
            printf("%s%d", i ? "," : "", primes[i]);
        printf("\n");
    }
    printf("thread %s\n", other_thread ? "other" : "caller");
    EVP_PKEY_free(g.key);
    BN_free(g.e);
    OSSL_LIB_CTX_free(g.lib);
    return 0;
}
