/*
 * Key import through OSSL_PARAMs (EVP_PKEY_fromdata), one provider at a
 * time, then one signature with the imported key:
 *
 *   key_import CONFIG PROVIDER KEY.pem [CHANGE...]
 *
 * CONFIG loads the default provider and rustica; PROVIDER ("rustica" or
 * "default") is the only provider the import and the signature may use.
 * KEY.pem is a plain RSA key (read by the default provider); its parts are
 * imported with these changes:
 *
 *   big-NAME:BYTES    adds 2^(8*BYTES) to part NAME (d, p, q, dp, dq, qinv)
 *   flip-NAME:BIT     flips bit BIT of part NAME
 *   crt-of:OTHER.pem  p, q, dp, dq and qinv of another key
 *   pss               imports an RSA-PSS key instead of an RSA key
 *   pss-NAME:VALUE    and adds the restriction NAME (digest, mgf1-digest,
 *                     mask-gen-func: strings; saltlen: an integer)
 *   no-sign           stops after the import
 *   out:FILE          writes the imported key to FILE (PEM, PKCS#8)
 *
 * Output, one line per stage reached:
 *   "import ok" or "import fails: REASONS"
 *   "sign init fails: REASONS", "sign fails: REASONS" or
 *   "sign ok" (for an RSA key: "sign ok verified=0|1", checked by the
 *   default provider with KEY.pem's public key)
 * REASONS lists the error queue, each entry as [reason: data].
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

static const char *const NAMES[8] = {
    OSSL_PKEY_PARAM_RSA_N, OSSL_PKEY_PARAM_RSA_E, OSSL_PKEY_PARAM_RSA_D,
    OSSL_PKEY_PARAM_RSA_FACTOR1, OSSL_PKEY_PARAM_RSA_FACTOR2,
    OSSL_PKEY_PARAM_RSA_EXPONENT1, OSSL_PKEY_PARAM_RSA_EXPONENT2,
    OSSL_PKEY_PARAM_RSA_COEFFICIENT1,
};
/* How the command line names them. */
static const char *const SHORT[8] = { "n", "e", "d", "p", "q", "dp", "dq", "qinv" };

static void fails(const char *stage)
{
    unsigned long e;
    const char *data;
    int flags;

    printf("%s fails:", stage);
    while ((e = ERR_get_error_all(NULL, NULL, NULL, &data, &flags)) != 0) {
        const char *r = ERR_reason_error_string(e);
        int text = (flags & ERR_TXT_STRING) != 0 && data != NULL && *data != '\0';

        printf(" [%s%s%s]", r != NULL ? r : "no reason", text ? ": " : "", text ? data : "");
    }
    printf("\n");
}

static EVP_PKEY *read_key(OSSL_LIB_CTX *lib, const char *path)
{
    FILE *f = fopen(path, "r");
    EVP_PKEY *key = NULL;

    if (f != NULL) {
        key = PEM_read_PrivateKey_ex(f, NULL, NULL, NULL, lib, "provider=default");
        fclose(f);
    }
    if (key == NULL) {
        fprintf(stderr, "key_import: cannot read %s\n", path);
        ERR_print_errors_fp(stderr);
        exit(1);
    }
    return key;
}

static int part_index(const char *name, size_t len)
{
    int i;

    for (i = 0; i < 8; i++)
        if (strlen(SHORT[i]) == len && strncmp(SHORT[i], name, len) == 0)
            return i;
    fprintf(stderr, "key_import: no key part '%.*s'\n", (int)len, name);
    exit(2);
}

int main(int argc, char **argv)
{
    OSSL_LIB_CTX *lib;
    EVP_PKEY *ref, *key = NULL;
    BIGNUM *parts[8] = { NULL };
    OSSL_PARAM_BLD *bld;
    OSSL_PARAM *params;
    EVP_PKEY_CTX *ctx;
    EVP_MD_CTX *md;
    char propq[64];
    const char *out = NULL;
    int pss = 0, sign = 1, i;
    static const unsigned char msg[] = "rustica key import";
    unsigned char sig[2048];
    size_t siglen = sizeof(sig);

    if (argc < 4) {
        fprintf(stderr, "usage: key_import CONFIG PROVIDER KEY.pem [CHANGE...]\n");
        return 2;
    }
    lib = OSSL_LIB_CTX_new();
    if (lib == NULL || OSSL_LIB_CTX_load_config(lib, argv[1]) != 1) {
        ERR_print_errors_fp(stderr);
        return 1;
    }
    snprintf(propq, sizeof(propq), "provider=%s", argv[2]);
    ref = read_key(lib, argv[3]);
    for (i = 0; i < 8; i++)
        if (EVP_PKEY_get_bn_param(ref, NAMES[i], &parts[i]) != 1) {
            fprintf(stderr, "key_import: %s has no %s\n", argv[3], SHORT[i]);
            return 1;
        }
    bld = OSSL_PARAM_BLD_new();
    for (i = 4; i < argc; i++) {
        const char *a = argv[i], *colon = strchr(a, ':');

        if (strncmp(a, "big-", 4) == 0 && colon != NULL) {
            int at = part_index(a + 4, (size_t)(colon - a - 4));
            BIGNUM *add = BN_new();

            if (add == NULL || !BN_set_bit(add, 8 * atoi(colon + 1))
                || !BN_add(parts[at], parts[at], add))
                return 1;
            BN_free(add);
        } else if (strncmp(a, "flip-", 5) == 0 && colon != NULL) {
            int at = part_index(a + 5, (size_t)(colon - a - 5)), bit = atoi(colon + 1);

            if (!(BN_is_bit_set(parts[at], bit) ? BN_clear_bit(parts[at], bit)
                                                 : BN_set_bit(parts[at], bit)))
                return 1;
        } else if (strncmp(a, "crt-of:", 7) == 0) {
            EVP_PKEY *other = read_key(lib, a + 7);
            int j;

            for (j = 3; j < 8; j++) {
                BN_free(parts[j]);
                parts[j] = NULL;
                if (EVP_PKEY_get_bn_param(other, NAMES[j], &parts[j]) != 1)
                    return 1;
            }
            EVP_PKEY_free(other);
        } else if (strcmp(a, "pss") == 0) {
            pss = 1;
        } else if (strncmp(a, "pss-saltlen:", 12) == 0) {
            pss = 1;
            OSSL_PARAM_BLD_push_int(bld, OSSL_PKEY_PARAM_RSA_PSS_SALTLEN, atoi(a + 12));
        } else if (strncmp(a, "pss-", 4) == 0 && colon != NULL) {
            /* The builder keeps the key pointer: a string of its own. */
            char *name = strndup(a + 4, (size_t)(colon - a - 4));

            pss = 1;
            if (name == NULL || !OSSL_PARAM_BLD_push_utf8_string(bld, name, colon + 1, 0))
                return 1;
        } else if (strcmp(a, "no-sign") == 0) {
            sign = 0;
        } else if (strncmp(a, "out:", 4) == 0) {
            out = a + 4;
        } else {
            fprintf(stderr, "key_import: unknown change '%s'\n", a);
            return 2;
        }
    }
    for (i = 0; i < 8; i++)
        OSSL_PARAM_BLD_push_BN(bld, NAMES[i], parts[i]);
    params = OSSL_PARAM_BLD_to_param(bld);
    ctx = EVP_PKEY_CTX_new_from_name(lib, pss ? "RSA-PSS" : "RSA", propq);
    if (params == NULL || ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1
        || EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_KEYPAIR, params) != 1) {
        fails("import");
        return 0;
    }
    printf("import ok\n");
    if (out != NULL) {
        FILE *f = fopen(out, "w");

        if (f == NULL || PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) != 1) {
            fprintf(stderr, "key_import: cannot write %s\n", out);
            return 1;
        }
        fclose(f);
    }
    if (!sign)
        return 0;
    md = EVP_MD_CTX_new();
    if (md == NULL || EVP_DigestSignInit_ex(md, NULL, NULL, lib, propq, key, NULL) != 1) {
        fails("sign init");
        return 0;
    }
    if (EVP_DigestSign(md, sig, &siglen, msg, sizeof(msg)) != 1) {
        fails("sign");
        return 0;
    }
    if (pss) {
        printf("sign ok\n");
    } else {
        EVP_MD_CTX *v = EVP_MD_CTX_new();
        int ok = v != NULL
            && EVP_DigestVerifyInit_ex(v, NULL, "SHA256", lib, "provider=default", ref, NULL) == 1
            && EVP_DigestVerify(v, sig, siglen, msg, sizeof(msg)) == 1;

        printf("sign ok verified=%d\n", ok);
        EVP_MD_CTX_free(v);
    }
    ERR_clear_error();
    EVP_MD_CTX_free(md);
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    for (i = 0; i < 8; i++)
        BN_clear_free(parts[i]);
    EVP_PKEY_free(key);
    EVP_PKEY_free(ref);
    OSSL_LIB_CTX_free(lib);
    return 0;
}
