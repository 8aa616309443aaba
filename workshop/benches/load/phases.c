/*
 * Where a process's time goes, phase by phase, for the work of one
 * `openssl dgst -sign`: loading the configuration (and with it every
 * provider it activates), reading a PEM private key, a signing context's
 * init, one signature of a SHA-256 digest, and OPENSSL_cleanup (which
 * unloads the providers). Prints the signing provider's name, then each
 * phase's wall time in microseconds and the minor page faults it took.
 * workshop/scripts/bench-load.sh runs it per side (workshop/benches/load/run.py).
 *
 * usage: phases KEY.pem      (the configuration comes from OPENSSL_CONF)
 */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#define PHASES 5

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static long minor_faults(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_minflt;
}

static double at[PHASES + 1];
static long faults[PHASES + 1];

static void mark(int i)
{
    at[i] = now_us();
    faults[i] = minor_faults();
}

int main(int argc, char **argv)
{
    static const unsigned char digest_input[32] = { 1 };
    unsigned char sig[2048];
    size_t siglen = sizeof(sig);
    char signer[64];
    EVP_MD_CTX *mdctx;
    EVP_PKEY_CTX *pctx = NULL;
    EVP_PKEY *key;
    FILE *f;

    if (argc != 2) {
        fprintf(stderr, "usage: phases KEY.pem\n");
        return 2;
    }
    mark(0);
    if (!OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, NULL))
        return 1;
    mark(1);
    if ((f = fopen(argv[1], "r")) == NULL)
        return 1;
    key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    if (key == NULL)
        return 1;
    mark(2);
    if ((mdctx = EVP_MD_CTX_new()) == NULL
        || EVP_DigestSignInit_ex(mdctx, &pctx, "SHA256", NULL, NULL, key, NULL) != 1)
        return 1;
    mark(3);
    if (EVP_DigestSign(mdctx, sig, &siglen, digest_input, sizeof(digest_input)) != 1)
        return 1;
    mark(4);
    /* The name is copied now: cleanup unloads the provider that owns it. */
    snprintf(signer, sizeof(signer), "%s",
             OSSL_PROVIDER_get0_name(EVP_PKEY_CTX_get0_provider(pctx)));
    EVP_MD_CTX_free(mdctx);
    EVP_PKEY_free(key);
    OPENSSL_cleanup();
    mark(5);
    printf("%s", signer);
    for (int i = 0; i < PHASES; i++)
        printf(" %.1f", at[i + 1] - at[i]);
    for (int i = 0; i < PHASES; i++)
        printf(" %ld", faults[i + 1] - faults[i]);
    printf("\n");
    return 0;
}
