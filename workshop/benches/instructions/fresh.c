/* N signatures or verifications with a fresh signing context each, as a
 * DNSSEC signer does for every RRSIG (BIND's dst layer, PowerDNS): a new
 * EVP_MD_CTX, EVP_DigestSignInit_ex (or EVP_DigestVerifyInit_ex) with
 * SHA-256, one EVP_DigestSign (EVP_DigestVerify) over a short message, then
 * the context is freed. A benchmark driver for workshop/scripts/bench-cache.sh, run
 * under callgrind (with or without its cache simulation) at two values of
 * N; as workshop/benches/instructions/ops.c does, callgrind collects only the N
 * operations after WARMUP (run it with --collect-atstart=no), and every
 * result is checked. PKCS#1 v1.5 (DNSSEC's RSASHA256). Prints one line:
 *   <provider of the last operation's context> <operations counted>
 * usage: fresh OPERATION WARMUP N KEY.pem [MILLISECONDS]
 *   OPERATION: dsign-fresh dverify-fresh
 * With MILLISECONDS (workshop/scripts/bench-fresh-ctx.sh, wall time, not under
 * valgrind) it runs for that long after the warm-up instead of N times
 * and prints a third field, operations per second.
 * Uses the OPENSSL_CONF of the process.
 * Built with -DQEMU_COUNT_MARKS (workshop/scripts/s390x-count.sh, cross-built for
 * s390x) it needs no valgrind: where callgrind's collection is toggled it
 * marks the point for workshop/benches/instructions/qemu-count.c instead, a
 * write(-1, NULL, 0x51434e54) the kernel refuses with EBADF. */
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef QEMU_COUNT_MARKS
#include <unistd.h>
#include <sys/syscall.h>
#define CALLGRIND_TOGGLE_COLLECT ((void)syscall(SYS_write, -1, NULL, (size_t)0x51434e54))
#else
#include <valgrind/callgrind.h>
#endif

static double seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One operation on a context made for it. The provider that ran it is
 * written to *provider (the name stays valid while the provider is
 * loaded). */
static int once(EVP_PKEY *key, int sign, unsigned char *sig, size_t *sig_len,
                const unsigned char *msg, size_t msg_len, const char **provider)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    int ok = 0;

    if (md == NULL)
        return 0;
    if (sign) {
        ok = EVP_DigestSignInit_ex(md, &pctx, "SHA256", NULL, NULL, key, NULL) == 1
             && EVP_DigestSign(md, sig, sig_len, msg, msg_len) == 1;
    } else {
        ok = EVP_DigestVerifyInit_ex(md, &pctx, "SHA256", NULL, NULL, key, NULL) == 1
             && EVP_DigestVerify(md, sig, *sig_len, msg, msg_len) == 1;
    }
    if (ok && pctx != NULL)
        *provider = OSSL_PROVIDER_get0_name(EVP_PKEY_CTX_get0_provider(pctx));
    EVP_MD_CTX_free(md);
    return ok;
}

int main(int argc, char **argv)
{
    unsigned char msg[160], sig[1024];
    size_t sig_len = sizeof(sig);
    const char *provider = "none";
    EVP_PKEY *key = NULL;
    FILE *file;
    long warmup, n, i = 0;
    int sign, status = 1;
    double ms = 0, start = 0, end = 1e300;

    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: fresh OPERATION WARMUP N KEY.pem [MILLISECONDS]\n");
        return 2;
    }
    sign = strcmp(argv[1], "dsign-fresh") == 0;
    warmup = strtol(argv[2], NULL, 10);
    n = strtol(argv[3], NULL, 10);
    if ((!sign && strcmp(argv[1], "dverify-fresh") != 0) || warmup < 0 || n < 0) {
        fprintf(stderr, "fresh: unknown operation %s or bad counts %s %s\n", argv[1], argv[2],
                argv[3]);
        return 2;
    }
    if (argc == 6 && (ms = strtod(argv[5], NULL)) <= 0) {
        fprintf(stderr, "fresh: bad duration %s\n", argv[5]);
        return 2;
    }
    if ((file = fopen(argv[4], "r")) == NULL) {
        perror(argv[4]);
        return 2;
    }
    key = PEM_read_PrivateKey(file, NULL, NULL, NULL);
    fclose(file);
    if (key == NULL)
        goto done;
    /* About an RRSIG's signed data for a small RRset. */
    memset(msg, 0x5a, sizeof(msg));
    /* A verification's signature, made the same way. */
    if (!sign && !once(key, 1, sig, &sig_len, msg, sizeof(msg), &provider))
        goto done;
    if (ms > 0) {
        /* Timed: the warm-up, then operations until the time is up (the
         * clock is read once per operation, on both sides alike). */
        for (i = 0; i < warmup || seconds() < end; i++) {
            size_t len = sign ? sizeof(sig) : sig_len;
            if (i == warmup) {
                start = seconds();
                end = start + ms / 1e3;
            }
            if (!once(key, sign, sig, &len, msg, sizeof(msg), &provider))
                goto done;
        }
        printf("%s %ld %.2f\n", provider, i - warmup, (double)(i - warmup) / (seconds() - start));
        status = 0;
        goto done;
    }
    for (i = 0; i < warmup + n; i++) {
        size_t len = sign ? sizeof(sig) : sig_len;
        if (i == warmup)
            CALLGRIND_TOGGLE_COLLECT;
        if (!once(key, sign, sig, &len, msg, sizeof(msg), &provider))
            goto done;
    }
    if (n > 0)
        CALLGRIND_TOGGLE_COLLECT;
    printf("%s %ld\n", provider, n);
    status = 0;
done:
    if (status != 0)
        fprintf(stderr, "fresh: %s failed after %ld operations\n", argv[1], i);
    EVP_PKEY_free(key);
    return status;
}
