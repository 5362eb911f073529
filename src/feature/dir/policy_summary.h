/* policy_summary.h -- exit-policy summaries as consensuses ("p" lines of
 * the ns flavor) and microdescriptors ("p" and "p6" lines) carry them
 * (dir-spec 3.4.1, 3.8.2):
 *
 *   ("accept" / "reject") SP PortOrRange ("," PortOrRange)*
 *   PortOrRange = INT "-" INT / INT          (1..65535, ascending)
 *
 * "accept 80,443" means: exits to most addresses on ports 80 and 443;
 * "reject 1-65535" (or no line at all) means: not an exit.
 */
#ifndef PCTOR_FEATURE_DIR_POLICY_SUMMARY_H
#define PCTOR_FEATURE_DIR_POLICY_SUMMARY_H
#include <stddef.h>
#include <stdint.h>

typedef struct policy_range_t {
  uint16_t lo, hi;
} policy_range_t;

typedef struct policy_summary_t {
  int accept; /* 1: the ranges are accepted, 0: rejected */
  int n_ranges;
  policy_range_t *ranges; /* sorted, non-overlapping */
} policy_summary_t;

#define POLICY_SUMMARY_MAX_RANGES 4096

/* Parse the two arguments ("accept", "80,443") of a p/p6 line. Returns a
 * new summary, or NULL with *err (static string) on malformed input. */
policy_summary_t *policy_summary_parse(const char *verb, size_t verb_len,
                                       const char *list, size_t list_len,
                                       const char **err);
/* A summary that rejects everything ("reject 1-65535"). */
policy_summary_t *policy_summary_new_reject_all(void);
void policy_summary_free_(policy_summary_t *p);
#define policy_summary_free(p)                                                \
  do {                                                                        \
    policy_summary_free_(p);                                                  \
    (p) = NULL;                                                               \
  } while (0)
/* 1 if the summary says the relay exits to port (most addresses).
 * A NULL summary rejects everything. */
int policy_summary_allows_port(const policy_summary_t *p, uint16_t port);
/* 1 if it allows at least one port. */
int policy_summary_allows_any(const policy_summary_t *p);
/* Write "accept 80,443" into buf; returns buf. */
char *policy_summary_format(const policy_summary_t *p, char *buf,
                            size_t buflen);
#endif
