/* Resident set of an OpenSSL process (a benchmark helper): loads the
 * configuration of OPENSSL_CONF (so its providers), then signs COUNT SHA-256
 * digests with KEY (PKCS#1 v1.5; none for COUNT 0, the idle process) and
 * prints "<VmRSS kB> <RssAnon kB> <RssFile kB> <provider that signed or ->"
 * (RssAnon: the process's own pages, relocated data included; RssFile:
 * pages of mapped files, shared with every process that maps them).
 * usage: rss COUNT [KEY.pem] */
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long status_kb(const char *field)
{
    char line[256];
    long kb = -1;
    size_t len = strlen(field);
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, field, len) == 0 && line[len] == ':')
            kb = atol(line + len + 1);
    if (f)
        fclose(f);
    return kb;
}

static void report(const char *provider)
{
    printf("%ld %ld %ld %s\n", status_kb("VmRSS"), status_kb("RssAnon"), status_kb("RssFile"),
           provider);
}

int main(int argc, char **argv)
{
    long count = argc > 1 ? atol(argv[1]) : -1;
    const char *provider = "-";
    if (count < 0 || (count > 0 && argc < 3)) {
        fprintf(stderr, "usage: rss COUNT [KEY.pem]\n");
        return 2;
    }
    if (OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, NULL) != 1)
        return 1;
    if (count > 0) {
        FILE *f = fopen(argv[2], "r");
        EVP_PKEY *key = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
        if (f)
            fclose(f);
        unsigned char md[32] = {0}, sig[1024];
        for (long i = 0; key != NULL && i < count; i++) {
            /* A context per signature, as a process signing requests would. */
            EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
            size_t len = sizeof(sig);
            memcpy(md, &i, sizeof(i));
            if (ctx == NULL || EVP_PKEY_sign_init(ctx) != 1
                || EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) != 1
                || EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) != 1
                || EVP_PKEY_sign(ctx, sig, &len, md, sizeof(md)) != 1) {
                fprintf(stderr, "rss: signature %ld failed\n", i);
                return 1;
            }
            provider = OSSL_PROVIDER_get0_name(EVP_PKEY_CTX_get0_provider(ctx));
            EVP_PKEY_CTX_free(ctx);
        }
        if (key == NULL) {
            fprintf(stderr, "rss: cannot load %s\n", argv[2]);
            return 1;
        }
        /* The key stays alive: its cached state is part of the cost. */
        report(provider);
        EVP_PKEY_free(key);
        return 0;
    }
    report(provider);
    return 0;
}
