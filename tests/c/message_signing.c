/*
 * OpenSSL 3.4's message-signing API with the composite RSA algorithms, as
 * an application uses it:
 *
 *   message_signing CONFIG KEY.pem PSSKEY.pem
 *
 * CONFIG loads rustica and default. KEY is an RSA key, PSSKEY an RSA-PSS
 * key. For each composite algorithm the program fetches rustica's
 * implementation ("provider=rustica") and the default provider's, and:
 *   - signs a message in three updates with rustica, checks the context's
 *     provider is rustica, and compares with the default provider's
 *     one-shot signature (PKCS#1 v1.5 is deterministic);
 *   - verifies it with rustica (signature given as a parameter, updates,
 *     final) and in one shot, and refuses a tampered message;
 *   - signs a digest with EVP_PKEY_sign_init_ex2 and recovers it with
 *     EVP_PKEY_verify_recover_init_ex2.
 * Then the misuse cases: an update after the final call, a one-shot call
 * after an update, an RSA-PSS key, a verify_message_final without a
 * signature. Each must fail with an error on the queue.
 * Prints "signed N verified N" (rustica operations it expects counted).
 * Exit 0 = everything as expected.
 */
#include <stdio.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>

static const char *const algorithms[] = {
    "RSA-SHA1", "RSA-SHA2-224", "RSA-SHA2-256", "RSA-SHA2-384",
    "RSA-SHA2-512", "RSA-SHA2-512/224", "RSA-SHA2-512/256", "RSA-SHA3-224",
    "RSA-SHA3-256", "RSA-SHA3-384", "RSA-SHA3-512", "RSA-RIPEMD160",
    "RSA-SM3", "sha256WithRSAEncryption", "1.2.840.113549.1.1.11",
};
static const unsigned char msg[] = "the quick brown fox jumps over the lazy dog";
static int signed_count, verified_count;

static int fail(const char *alg, const char *what)
{
    fprintf(stderr, "message_signing: %s: %s\n", alg, what);
    ERR_print_errors_fp(stderr);
    return 0;
}

/* An expected failure: it must leave an error on the queue. */
static int refused(const char *alg, const char *what, int rc)
{
    if (rc > 0)
        return fail(alg, what);
    if (ERR_peek_error() == 0)
        return fail(alg, "a refusal left no error on the queue");
    ERR_clear_error();
    return 1;
}

static int on_rustica(EVP_PKEY_CTX *ctx, const char *alg)
{
    const OSSL_PROVIDER *p = EVP_PKEY_CTX_get0_provider(ctx);

    if (p == NULL || strcmp(OSSL_PROVIDER_get0_name(p), "rustica") != 0)
        return fail(alg, "the operation did not run on rustica");
    return 1;
}

static int default_signature(OSSL_LIB_CTX *lib, EVP_PKEY *key, const char *alg,
                             unsigned char *sig, size_t *siglen)
{
    EVP_SIGNATURE *s = EVP_SIGNATURE_fetch(lib, alg, "provider=default");
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(lib, key, "provider=default");
    int ok = s != NULL && ctx != NULL
        && EVP_PKEY_sign_message_init(ctx, s, NULL) == 1
        && EVP_PKEY_sign(ctx, sig, siglen, msg, sizeof(msg)) == 1;

    EVP_PKEY_CTX_free(ctx);
    EVP_SIGNATURE_free(s);
    return ok ? 1 : fail(alg, "the default provider's signature");
}

static int one_algorithm(OSSL_LIB_CTX *lib, EVP_PKEY *key, const char *alg)
{
    unsigned char sig[1024], ref[1024], md[64], out[1024];
    size_t siglen = sizeof(sig), reflen = sizeof(ref), outlen = sizeof(out);
    unsigned int mdlen = 0;
    EVP_SIGNATURE *s = EVP_SIGNATURE_fetch(lib, alg, "provider=rustica");
    EVP_PKEY_CTX *ctx = NULL;
    OSSL_PARAM params[2];
    int ok = 0;

    if (s == NULL)
        return fail(alg, "rustica does not offer it");
    ctx = EVP_PKEY_CTX_new_from_pkey(lib, key, "provider=rustica");
    /* Sign in three updates. */
    if (ctx == NULL || EVP_PKEY_sign_message_init(ctx, s, NULL) != 1
        || !on_rustica(ctx, alg)
        || EVP_PKEY_sign_message_update(ctx, msg, 10) != 1
        || EVP_PKEY_sign_message_update(ctx, msg + 10, 0) != 1
        || EVP_PKEY_sign_message_update(ctx, msg + 10, sizeof(msg) - 10) != 1
        || EVP_PKEY_sign_message_final(ctx, sig, &siglen) != 1) {
        fail(alg, "sign_message");
        goto end;
    }
    signed_count++;
    if (!refused(alg, "an update after the final call was accepted",
                 EVP_PKEY_sign_message_update(ctx, msg, 1)))
        goto end;
    if (!default_signature(lib, key, alg, ref, &reflen))
        goto end;
    if (siglen != reflen || memcmp(sig, ref, siglen) != 0) {
        fail(alg, "rustica's signature differs from the default provider's");
        goto end;
    }

    /* Verify: signature as a parameter, updates, final. */
    params[0] = OSSL_PARAM_construct_octet_string(OSSL_SIGNATURE_PARAM_SIGNATURE,
                                                  sig, siglen);
    params[1] = OSSL_PARAM_construct_end();
    if (EVP_PKEY_verify_message_init(ctx, s, params) != 1 || !on_rustica(ctx, alg)
        || EVP_PKEY_verify_message_update(ctx, msg, 5) != 1
        || EVP_PKEY_verify_message_update(ctx, msg + 5, sizeof(msg) - 5) != 1
        || EVP_PKEY_verify_message_final(ctx) != 1) {
        fail(alg, "verify_message with the signature as a parameter");
        goto end;
    }
    verified_count++;
    /* Verify in one shot, then a tampered message. */
    if (EVP_PKEY_verify_message_init(ctx, s, NULL) != 1
        || EVP_PKEY_verify(ctx, sig, siglen, msg, sizeof(msg)) != 1) {
        fail(alg, "one-shot verify_message");
        goto end;
    }
    verified_count++;
    if (EVP_PKEY_verify_message_init(ctx, s, NULL) != 1
        || EVP_PKEY_CTX_set_signature(ctx, sig, siglen) != 1
        || EVP_PKEY_verify_message_update(ctx, msg, sizeof(msg) - 1) != 1) {
        fail(alg, "verify_message of a tampered message: set-up");
        goto end;
    }
    if (!refused(alg, "a tampered message verified", EVP_PKEY_verify_message_final(ctx)))
        goto end;
    verified_count++;

    /* A digest, signed and recovered (not for the names given by OID). */
    if (strchr(alg, '.') == NULL && strstr(alg, "With") == NULL) {
        const char *mdname = alg + 4; /* "RSA-SHA2-256" -> "SHA2-256" */
        EVP_MD *evp_md = EVP_MD_fetch(lib, mdname, "provider=default");

        if (evp_md == NULL
            || EVP_Digest(msg, sizeof(msg), md, &mdlen, evp_md, NULL) != 1) {
            EVP_MD_free(evp_md);
            fail(alg, "digest");
            goto end;
        }
        EVP_MD_free(evp_md);
        siglen = sizeof(sig);
        if (EVP_PKEY_sign_init_ex2(ctx, s, NULL) != 1 || !on_rustica(ctx, alg)
            || EVP_PKEY_sign(ctx, sig, &siglen, md, mdlen) != 1) {
            fail(alg, "sign of a digest");
            goto end;
        }
        signed_count++;
        if (siglen != reflen || memcmp(sig, ref, siglen) != 0) {
            fail(alg, "the signature of the digest differs from that of the message");
            goto end;
        }
        if (EVP_PKEY_verify_recover_init_ex2(ctx, s, NULL) != 1
            || EVP_PKEY_verify_recover(ctx, out, &outlen, sig, siglen) != 1
            || outlen != mdlen || memcmp(out, md, mdlen) != 0) {
            fail(alg, "verify_recover of the digest");
            goto end;
        }
        verified_count++;
    }
    ok = 1;
end:
    EVP_PKEY_CTX_free(ctx);
    EVP_SIGNATURE_free(s);
    return ok;
}

static int misuse(OSSL_LIB_CTX *lib, EVP_PKEY *key, EVP_PKEY *pss_key)
{
    const char *alg = "RSA-SHA2-256";
    unsigned char sig[1024];
    size_t siglen = sizeof(sig);
    EVP_SIGNATURE *s = EVP_SIGNATURE_fetch(lib, alg, "provider=rustica");
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(lib, key, "provider=rustica");
    EVP_PKEY_CTX *pss_ctx = EVP_PKEY_CTX_new_from_pkey(lib, pss_key, NULL);
    int ok = 0;

    if (s == NULL || ctx == NULL || pss_ctx == NULL) {
        fail(alg, "misuse set-up");
        goto end;
    }
    /* A one-shot call after an update. */
    if (EVP_PKEY_sign_message_init(ctx, s, NULL) != 1
        || EVP_PKEY_sign_message_update(ctx, msg, 3) != 1) {
        fail(alg, "misuse: sign_message set-up");
        goto end;
    }
    if (!refused(alg, "a one-shot sign after an update was accepted",
                 EVP_PKEY_sign(ctx, sig, &siglen, msg, sizeof(msg))))
        goto end;
    /* A final call without a signature to verify. */
    if (EVP_PKEY_verify_message_init(ctx, s, NULL) != 1
        || EVP_PKEY_verify_message_update(ctx, msg, sizeof(msg)) != 1) {
        fail(alg, "misuse: verify_message set-up");
        goto end;
    }
    if (!refused(alg, "verify_message_final without a signature was accepted",
                 EVP_PKEY_verify_message_final(ctx)))
        goto end;
    verified_count++;
    /* RSA-PSS keys have no composite algorithm. */
    if (!refused(alg, "an RSA-PSS key was accepted",
                 EVP_PKEY_sign_message_init(pss_ctx, s, NULL)))
        goto end;
    ok = 1;
end:
    EVP_PKEY_CTX_free(pss_ctx);
    EVP_PKEY_CTX_free(ctx);
    EVP_SIGNATURE_free(s);
    return ok;
}

static EVP_PKEY *read_key(OSSL_LIB_CTX *lib, const char *path)
{
    FILE *f = fopen(path, "r");
    EVP_PKEY *key = NULL;

    if (f != NULL) {
        key = PEM_read_PrivateKey_ex(f, NULL, NULL, NULL, lib, NULL);
        fclose(f);
    }
    return key;
}

int main(int argc, char **argv)
{
    OSSL_LIB_CTX *lib = OSSL_LIB_CTX_new();
    EVP_PKEY *key = NULL, *pss_key = NULL;
    size_t i;
    int ok = 0;

    if (argc != 4) {
        fprintf(stderr, "usage: message_signing CONFIG KEY.pem PSSKEY.pem\n");
        return 2;
    }
    if (lib == NULL || !OSSL_LIB_CTX_load_config(lib, argv[1])) {
        fail("-", "loading the configuration");
        goto end;
    }
    key = read_key(lib, argv[2]);
    pss_key = read_key(lib, argv[3]);
    if (key == NULL || pss_key == NULL) {
        fail("-", "reading the keys");
        goto end;
    }
    for (i = 0; i < sizeof(algorithms) / sizeof(algorithms[0]); i++)
        if (!one_algorithm(lib, key, algorithms[i]))
            goto end;
    if (!misuse(lib, key, pss_key))
        goto end;
    printf("signed %d verified %d\n", signed_count, verified_count);
    ok = 1;
end:
    EVP_PKEY_free(pss_key);
    EVP_PKEY_free(key);
    OSSL_LIB_CTX_free(lib);
    return ok ? 0 : 1;
}
