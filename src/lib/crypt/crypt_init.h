/* SPDX-License-Identifier: BSD-3-Clause */
/* crypt_init.h -- start-up of the crypto library (call once from main). */
#ifndef PCTOR_LIB_CRYPT_CRYPT_INIT_H
#define PCTOR_LIB_CRYPT_CRYPT_INIT_H
/* Initialise OpenSSL; returns 0, or -1 if the library is unusable. */
int crypt_global_init(void);
/* Version string of the OpenSSL in use, for --version and logs. */
const char *crypt_library_version(void);
#endif
