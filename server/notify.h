/*
 * The service manager's notification protocol (sd_notify(3), the datagram
 * form documented in systemd's "Interface Portability and Stability" notes):
 * when NOTIFY_SOCKET names a unix datagram socket (a path, or "@name" for the
 * abstract namespace), each state change is one datagram of "KEY=VALUE"
 * lines. draped sends READY=1 once its sockets listen, RELOADING=1 and
 * READY=1 around a SIGHUP reload, STOPPING=1 when SIGTERM/SIGINT start the
 * shutdown, and WATCHDOG=1 every WATCHDOG_USEC / 2 from the loop (so a
 * stuck loop stops the pings and systemd restarts the daemon).
 *
 * Written here rather than linked from libsystemd: the protocol is one
 * sendto, and the daemon then runs the same with or without systemd.
 */
#ifndef DRAPE_SRV_NOTIFY_H
#define DRAPE_SRV_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

/* Sends state (e.g. "READY=1\nSTATUS=...") to NOTIFY_SOCKET. Returns 1 when
 * sent, 0 when there is no NOTIFY_SOCKET, a negative errno on failure. */
int srv_notify(const char *state);

/* The watchdog interval in microseconds when WATCHDOG_USEC is set and
 * WATCHDOG_PID is unset or this process; 0 otherwise. */
uint64_t srv_notify_watchdog_usec(void);

#endif
