/*
 * An application that does its RSA in its own OSSL_LIB_CTX, as OpenSSL's
 * own tests and hardened programs do:
 *
 *   libctx_cycle CONFIG ROUNDS MODE [DEFAULT_CTX_PROVIDER]
 *
 * The default library context gets only DEFAULT_CTX_PROVIDER ("null"
 * unless given), so by default it has no random generator: anything that
 * draws from it fails. With "default" there, only the teardown is tested. Each round creates a
 * library context, loads CONFIG into it (rustica + default, with
 * default_properties = ?provider=rustica), generates a key, signs and
 * verifies (PSS), encrypts and decrypts (OAEP), checks that rustica did
 * each of those (EVP_PKEY_CTX_get0_provider), frees everything and then
 * the context. MODE says how rustica goes away each round:
 *   free    OSSL_LIB_CTX_free with rustica still loaded (its child library
 *           context is torn down with the parent)
 *   unload  OSSL_PROVIDER_unload of rustica (loaded explicitly, not by the
 *           config) before the context is freed
 * The process ends with OPENSSL_cleanup (at exit). Exit 0 = all rounds ok.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>

static int fail(const char *what)
{
    fprintf(stderr, "libctx_cycle: %s failed\n", what);
    ERR_print_errors_fp(stderr);
    return 0;
}

static int by_rustica(EVP_PKEY_CTX *ctx, const char *what)
{
    const OSSL_PROVIDER *p = EVP_PKEY_CTX_get0_provider(ctx);
    const char *name = p == NULL ? "(none)" : OSSL_PROVIDER_get0_name(p);

    if (strcmp(name, "rustica") != 0) {
        fprintf(stderr, "libctx_cycle: %s ran on %s, not rustica\n", what, name);
        return 0;
    }
    return 1;
}

static int one_round(OSSL_LIB_CTX *lib)
{
    int ok = 0;
    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *gen = NULL, *sctx = NULL, *vctx = NULL, *ectx = NULL, *dctx = NULL;
    unsigned char tbs[32], sig[512], ct[512], pt[512];
    size_t siglen = sizeof(sig), ctlen = sizeof(ct), ptlen = sizeof(pt);
    const unsigned char msg[] = "rustica in its own library context";

    memset(tbs, 0x5a, sizeof(tbs));
    gen = EVP_PKEY_CTX_new_from_name(lib, "RSA", NULL);
    if (gen == NULL || EVP_PKEY_keygen_init(gen) <= 0
        || EVP_PKEY_CTX_set_rsa_keygen_bits(gen, 1024) <= 0
        || !by_rustica(gen, "key generation")
        || EVP_PKEY_generate(gen, &key) <= 0) {
        fail("key generation");
        goto end;
    }

    sctx = EVP_PKEY_CTX_new_from_pkey(lib, key, NULL);
    if (sctx == NULL || EVP_PKEY_sign_init(sctx) <= 0
        || EVP_PKEY_CTX_set_rsa_padding(sctx, RSA_PKCS1_PSS_PADDING) <= 0
        || EVP_PKEY_CTX_set_signature_md(sctx, EVP_sha256()) <= 0
        || !by_rustica(sctx, "signing")
        || EVP_PKEY_sign(sctx, sig, &siglen, tbs, sizeof(tbs)) <= 0) {
        fail("PSS signing");
        goto end;
    }
    vctx = EVP_PKEY_CTX_new_from_pkey(lib, key, NULL);
    if (vctx == NULL || EVP_PKEY_verify_init(vctx) <= 0
        || EVP_PKEY_CTX_set_rsa_padding(vctx, RSA_PKCS1_PSS_PADDING) <= 0
        || EVP_PKEY_CTX_set_signature_md(vctx, EVP_sha256()) <= 0
        || !by_rustica(vctx, "verification")
        || EVP_PKEY_verify(vctx, sig, siglen, tbs, sizeof(tbs)) != 1) {
        fail("PSS verification");
        goto end;
    }

    ectx = EVP_PKEY_CTX_new_from_pkey(lib, key, NULL);
    if (ectx == NULL || EVP_PKEY_encrypt_init(ectx) <= 0
        || EVP_PKEY_CTX_set_rsa_padding(ectx, RSA_PKCS1_OAEP_PADDING) <= 0
        || !by_rustica(ectx, "encryption")
        || EVP_PKEY_encrypt(ectx, ct, &ctlen, msg, sizeof(msg)) <= 0) {
        fail("OAEP encryption");
        goto end;
    }
    dctx = EVP_PKEY_CTX_new_from_pkey(lib, key, NULL);
    if (dctx == NULL || EVP_PKEY_decrypt_init(dctx) <= 0
        || EVP_PKEY_CTX_set_rsa_padding(dctx, RSA_PKCS1_OAEP_PADDING) <= 0
        || !by_rustica(dctx, "decryption")
        || EVP_PKEY_decrypt(dctx, pt, &ptlen, ct, ctlen) <= 0) {
        fail("OAEP decryption");
        goto end;
    }
    if (ptlen != sizeof(msg) || memcmp(pt, msg, ptlen) != 0) {
        fprintf(stderr, "libctx_cycle: OAEP round trip returned other bytes\n");
        goto end;
    }
    ok = 1;
end:
    EVP_PKEY_CTX_free(gen);
    EVP_PKEY_CTX_free(sctx);
    EVP_PKEY_CTX_free(vctx);
    EVP_PKEY_CTX_free(ectx);
    EVP_PKEY_CTX_free(dctx);
    EVP_PKEY_free(key);
    return ok;
}

int main(int argc, char **argv)
{
    OSSL_PROVIDER *null_prov;
    int rounds, i, unload;

    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: libctx_cycle CONFIG ROUNDS free|unload [null|default]\n");
        return 2;
    }
    rounds = atoi(argv[2]);
    unload = strcmp(argv[3], "unload") == 0;
    /* The default context: "null" = no random generator, no RSA. */
    null_prov = OSSL_PROVIDER_load(NULL, argc == 5 ? argv[4] : "null");
    if (null_prov == NULL) {
        fail("loading the default context's provider");
        return 1;
    }

    for (i = 0; i < rounds; i++) {
        OSSL_LIB_CTX *lib = OSSL_LIB_CTX_new();
        OSSL_PROVIDER *rustica = NULL;
        int ok;

        if (lib == NULL || !OSSL_LIB_CTX_load_config(lib, argv[1])) {
            fail("OSSL_LIB_CTX_load_config");
            return 1;
        }
        if (unload) {
            /* The config loads only default here; rustica comes by name. */
            rustica = OSSL_PROVIDER_load(lib, "rustica");
            if (rustica == NULL) {
                fail("OSSL_PROVIDER_load(rustica)");
                return 1;
            }
        }
        ok = one_round(lib);
        if (rustica != NULL && !OSSL_PROVIDER_unload(rustica)) {
            fail("OSSL_PROVIDER_unload(rustica)");
            return 1;
        }
        OSSL_LIB_CTX_free(lib);
        if (!ok) {
            fprintf(stderr, "libctx_cycle: round %d failed\n", i + 1);
            return 1;
        }
    }
    OSSL_PROVIDER_unload(null_prov);
    printf("libctx_cycle: %d rounds ok\n", rounds);
    return 0;
}
