/*
 * RSA key generation, rustica against the default provider:
 *
 *   keygen_check CONFIG PROPQ BITS E-HEX       one generation, then checks
 *   keygen_check CONFIG check KEY.pem          checks of an existing key
 *
 * CONFIG loads the default provider and rustica. A generation runs in a
 * context whose fetches carry PROPQ ("?provider=rustica" or
 * "?provider=default") and prints, on one line, where it stopped:
 *   "set_params fails: REASON", "generate fails: REASON", or
 *   "ok PROVIDER BITS"
 * and then the key's checks. The checks run on the default provider
 * (a copy of the key exported to it): EVP_PKEY_check, EVP_PKEY_pairwise_check,
 * EVP_PKEY_public_check and EVP_PKEY_private_check, plus facts of the
 * factors: "d<lcm" (d was reduced modulo lcm(p-1, q-1), as SP 800-56B
 * computes it, rather than modulo (p-1)(q-1)), "dbits>half" (d exceeds
 * 2^(nbits/2)) and "pq-far" (|p-q| > 2^(nbits/2-100)).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>

static const char *last_reason(void)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = ERR_reason_error_string(e);
    static char buf[256];

    if (r == NULL) {
        snprintf(buf, sizeof(buf), "reason %lu", (unsigned long)ERR_GET_REASON(e));
        return buf;
    }
    return r;
}

static BIGNUM *get(EVP_PKEY *key, const char *name)
{
    BIGNUM *b = NULL;

    return EVP_PKEY_get_bn_param(key, name, &b) == 1 ? b : NULL;
}

static int report(OSSL_LIB_CTX *lib, EVP_PKEY *key)
{
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(lib, key, "provider=default");
    BIGNUM *n = get(key, OSSL_PKEY_PARAM_RSA_N), *d = get(key, OSSL_PKEY_PARAM_RSA_D);
    BIGNUM *p = get(key, OSSL_PKEY_PARAM_RSA_FACTOR1), *q = get(key, OSSL_PKEY_PARAM_RSA_FACTOR2);
    BIGNUM *p1 = BN_new(), *q1 = BN_new(), *g = BN_new(), *l = BN_new(), *t = BN_new();
    BN_CTX *bn = BN_CTX_new();
    int nbits, ok;

    if (c == NULL || n == NULL || d == NULL || p == NULL || q == NULL || bn == NULL
        || t == NULL) {
        printf("checks unavailable\n");
        ERR_print_errors_fp(stderr);
        return 0;
    }
    nbits = BN_num_bits(n);
    ok = EVP_PKEY_check(c) == 1;
    printf("check=%d", ok);
    printf(" pairwise=%d", EVP_PKEY_pairwise_check(c) == 1);
    printf(" public=%d", EVP_PKEY_public_check(c) == 1);
    printf(" private=%d", EVP_PKEY_private_check(c) == 1);
    BN_sub(p1, p, BN_value_one());
    BN_sub(q1, q, BN_value_one());
    BN_gcd(g, p1, q1, bn);
    BN_mul(l, p1, q1, bn);
    BN_div(l, NULL, l, g, bn);
    printf(" d<lcm=%d", BN_cmp(d, l) < 0);
    printf(" dbits>half=%d", BN_num_bits(d) > nbits / 2);
    BN_sub(t, p, q);
    BN_set_negative(t, 0);
    BN_sub_word(t, 1);
    printf(" pq-far=%d\n", BN_num_bits(t) > nbits / 2 - 100);
    ERR_clear_error();
    BN_free(n); BN_free(d); BN_free(p); BN_free(q);
    BN_free(p1); BN_free(q1); BN_free(g); BN_free(l); BN_free(t);
    BN_CTX_free(bn);
    EVP_PKEY_CTX_free(c);
    return 1;
}

int main(int argc, char **argv)
{
    OSSL_LIB_CTX *lib;
    EVP_PKEY_CTX *gen;
    EVP_PKEY *key = NULL;
    BIGNUM *e = NULL;
    size_t bits;
    OSSL_PARAM params[3];
    unsigned char ebuf[64];
    int elen;

    if (argc != 5 && !(argc == 4 && strcmp(argv[2], "check") == 0)) {
        fprintf(stderr, "usage: keygen_check CONFIG PROPQ BITS E-HEX | CONFIG check KEY.pem\n");
        return 2;
    }
    lib = OSSL_LIB_CTX_new();
    if (lib == NULL || OSSL_LIB_CTX_load_config(lib, argv[1]) != 1) {
        ERR_print_errors_fp(stderr);
        return 1;
    }
    if (argc == 4) {
        FILE *f = fopen(argv[3], "r");

        if (f == NULL
            || (key = PEM_read_PrivateKey_ex(f, NULL, NULL, NULL, lib, "provider=default"))
               == NULL) {
            fprintf(stderr, "keygen_check: cannot read %s\n", argv[3]);
            return 1;
        }
        fclose(f);
        return report(lib, key) ? 0 : 1;
    }
    bits = strtoul(argv[3], NULL, 10);
    if (BN_hex2bn(&e, argv[4]) == 0)
        return 2;
    /* OSSL_PARAM unsigned integers are native-endian. */
    elen = BN_bn2nativepad(e, ebuf, BN_num_bytes(e) > 0 ? BN_num_bytes(e) : 1);
    params[0] = OSSL_PARAM_construct_size_t(OSSL_PKEY_PARAM_RSA_BITS, &bits);
    params[1] = OSSL_PARAM_construct_BN(OSSL_PKEY_PARAM_RSA_E, ebuf, elen);
    params[2] = OSSL_PARAM_construct_end();
    gen = EVP_PKEY_CTX_new_from_name(lib, "RSA", argv[2]);
    if (gen == NULL || EVP_PKEY_keygen_init(gen) != 1) {
        printf("init fails: %s\n", last_reason());
        return 0;
    }
    if (EVP_PKEY_CTX_set_params(gen, params) != 1) {
        printf("set_params fails: %s\n", last_reason());
        return 0;
    }
    if (EVP_PKEY_generate(gen, &key) != 1) {
        printf("generate fails: %s\n", last_reason());
        return 0;
    }
    printf("ok %s %d\n", OSSL_PROVIDER_get0_name(EVP_PKEY_CTX_get0_provider(gen)),
           EVP_PKEY_get_bits(key));
    report(lib, key);
    EVP_PKEY_free(key);
    EVP_PKEY_CTX_free(gen);
    BN_free(e);
    OSSL_LIB_CTX_free(lib);
    return 0;
}
