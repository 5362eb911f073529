/* SPDX-License-Identifier: BSD-3-Clause */
/* vici_client.h -- a non-blocking client for charon's VICI socket on
 * pctor's event loop.
 *
 * What it does:
 * - Connects to a unix stream socket (charon's "vici.socket"), or adopts an
 *   already connected socket (vici_client_attach_fd: tests, or a socket
 *   opened before pctor dropped privileges).
 * - Sends commands one at a time: VICI responses carry no sequence number,
 *   so a command is written only after the previous one was answered.
 *   Further commands wait in a bounded FIFO (vici_client_set_queue_limit);
 *   a command submitted to a full queue is refused (-1).
 * - Streaming commands (list-sas streams "list-sa", initiate/terminate
 *   stream "control-log"): when a stream event is named, the client
 *   registers it before sending the command, hands every such event to
 *   the stream callback until the CMD_RESPONSE, then unregisters it (unless
 *   the owner also registered it with vici_client_register_event).
 * - Event registrations (ike-updown, child-updown, ...) that survive
 *   reconnections: they are re-registered first thing on every new
 *   connection, before queued commands.
 * - Timeouts per command, counted from submission. A command that times
 *   out before it was sent is simply dropped. One that times out while it
 *   is on the wire leaves the stream in an unknown state (a late answer
 *   would be taken for the next command's), so the client then closes the
 *   connection, which fails the other pending commands with
 *   VICI_RESULT_CONN_LOST and triggers a reconnection if enabled. Give
 *   charon-side timeouts (initiate's "timeout") shorter than ours.
 * - Connection loss (EOF, error, malformed input from charon, timeout):
 *   every command not yet answered fails with VICI_RESULT_CONN_LOST, the
 *   state callback hears VICI_STATE_LOST, and with reconnection enabled
 *   the client retries with exponential backoff (min .. max delay, reset
 *   by a successful connection). charon forgets VICI-loaded keys and
 *   connections when it restarts, so owners re-load them from the
 *   VICI_STATE_CONNECTED callback.
 * - Anything malformed from the socket (bad segment length, unknown or
 *   unexpected packet type, bad message encoding, an answer with no
 *   command pending) is a protocol error: logged, and the connection is
 *   closed as above. It is never trusted further.
 *
 * Callbacks are only made from the event loop, never from inside a
 * vici_client_* call (except vici_client_free, which reports
 * VICI_RESULT_CANCELLED to the pending commands). Callbacks may submit
 * commands, (un)register events and call vici_client_free().
 * Messages passed to callbacks are only valid during the call.
 */
#ifndef PCTOR_FEATURE_IPSEC_VICI_CLIENT_H
#define PCTOR_FEATURE_IPSEC_VICI_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "feature/ipsec/vici_msg.h"
#include "lib/evloop/evloop.h"

typedef struct vici_client_t vici_client_t;

typedef enum {
  VICI_RESULT_OK = 0,        /* CMD_RESPONSE (or EVENT_CONFIRM) arrived */
  VICI_RESULT_UNKNOWN_CMD,   /* charon answered CMD_UNKNOWN */
  VICI_RESULT_UNKNOWN_EVENT, /* charon answered EVENT_UNKNOWN */
  VICI_RESULT_TIMEOUT,       /* no answer within the command's timeout */
  VICI_RESULT_CONN_LOST,     /* the connection closed before the answer */
  VICI_RESULT_CANCELLED,     /* the client was freed */
} vici_result_t;

typedef enum {
  VICI_STATE_CONNECTED,      /* a new connection is up */
  VICI_STATE_LOST,           /* an established connection went away */
  VICI_STATE_CONNECT_FAILED, /* one connection attempt failed */
} vici_state_t;

/* The answer to a command: msg is the CMD_RESPONSE (NULL unless
 * res == VICI_RESULT_OK); for event (un)registrations msg is NULL. */
typedef void (*vici_done_cb)(vici_client_t *c, vici_result_t res,
                             const vici_msg_t *msg, void *arg);
/* One event (a registered event, or a streamed one during a command). */
typedef void (*vici_event_cb)(vici_client_t *c, const char *event,
                              const vici_msg_t *msg, void *arg);
/* Connection state changes; why describes losses and failures. */
typedef void (*vici_state_cb)(vici_client_t *c, vici_state_t state,
                              const char *why, void *arg);

/* A client for the unix socket at path (NULL: only attach_fd). Does not
 * connect yet. Never returns NULL. */
vici_client_t *vici_client_new(evloop_t *loop, const char *path);
/* Close the connection, report VICI_RESULT_CANCELLED to every pending
 * command and free. May be called from any callback. */
void vici_client_free_(vici_client_t *c);
#define vici_client_free(c) do { vici_client_free_(c); (c) = NULL; } while (0)

void vici_client_set_state_cb(vici_client_t *c, vici_state_cb cb, void *arg);
/* Retry connecting after failures and losses, waiting min_ms, then twice
 * as long each time up to max_ms. min_ms 0 disables (the default). */
void vici_client_set_reconnect(vici_client_t *c, uint32_t min_ms,
                               uint32_t max_ms);
/* Most commands (and event (un)registrations) waiting or in flight at
 * once; default 64. */
void vici_client_set_queue_limit(vici_client_t *c, size_t limit);
/* Timeout used when a command is submitted with timeout_ms 0; default
 * 30000 ms. */
void vici_client_set_default_timeout(vici_client_t *c, uint32_t ms);

/* Check who serves the socket before sending anything on a new
 * connection (SO_PEERCRED): only root (when allow_root) or the user uid
 * (when uid >= 0). Another owner gets the connection closed with a
 * warning, as a failed connection attempt (retried with backoff). Off by
 * default (tools); the broker always turns it on, since it sends charon
 * its IKE private key. */
void vici_client_require_peer(vici_client_t *c, int allow_root, long uid);

/* Start connecting to the socket path (from the loop). Returns -1 only if
 * there is no usable path (none, or longer than a sockaddr_un holds). */
int vici_client_connect(vici_client_t *c);
/* Use fd, a connected stream socket (the client owns it from now on).
 * Any current connection is dropped first. Returns 0. */
int vici_client_attach_fd(vici_client_t *c, int fd);
int vici_client_is_connected(const vici_client_t *c);
/* Number of commands and registrations waiting or in flight. */
size_t vici_client_n_pending(const vici_client_t *c);

/* Queue command cmd with the message in args (NULL: empty message;
 * consumed: freed by this call whatever it returns). stream_event, when
 * not NULL, names the event streamed by this command; each one goes to
 * stream_cb. done is called exactly once with the result unless this
 * returns -1. timeout_ms 0 means the default. Commands may be submitted
 * while a (re)connection is pending; they wait for it.
 * Returns 0, or -1 when the queue is full, args is invalid, a name is
 * empty or too long, or the client is neither connected nor connecting. */
int vici_client_command(vici_client_t *c, const char *cmd,
                        vici_builder_t *args, const char *stream_event,
                        vici_event_cb stream_cb, vici_done_cb done,
                        void *arg, uint32_t timeout_ms);

/* Receive every event named event through cb, on this and later
 * connections. done (may be NULL) hears whether charon confirmed the
 * registration on the current connection. Returns 0, or -1 when the
 * event is already registered, the name is invalid or the queue is
 * full. */
int vici_client_register_event(vici_client_t *c, const char *event,
                               vici_event_cb cb, vici_done_cb done,
                               void *arg);
/* Stop receiving event (no callback for it after this returns); the
 * unregistration is sent to charon in turn. Returns 0, or -1 if the
 * event was not registered. */
int vici_client_unregister_event(vici_client_t *c, const char *event);

const char *vici_result_name(vici_result_t res);

/* For tests: 1 if any memory the client holds (its whole output and input
 * buffers, including their unused parts, and the messages of queued
 * commands) contains the len bytes at needle, else 0. Used to check that
 * a load-key's private key is wiped once sent. */
int vici_client_holds_for_testing(const vici_client_t *c, const void *needle,
                                  size_t len);

#endif
