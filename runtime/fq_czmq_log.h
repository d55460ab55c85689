/*  fq_czmq_log.h — CZMQ's own log lines, in fairq's format (fq_log.h).

    CZMQ writes lines of its own on stdout, in a format of its own
    ("W: 25-01-02 03:04:05 text", local time, no pid): its zauth actor on
    a command it does not know, zsys_shutdown at exit on a socket left
    open, and zconfig ("25-01-02 03:04:05 E (zconfig): (1) invalid syntax
    '...'") on a certificate that is no ZPL file, which zauth also meets
    for every stray file in the gateway's allow directory. Routed, each
    becomes an fq_log line at CZMQ's level, its text after "czmq: ".
*/
#ifndef FQ_CZMQ_LOG_H
#define FQ_CZMQ_LOG_H

//  Routes CZMQ's log (zsys_error ... zsys_debug) through fq_log, for the
//  rest of the process, and keeps it off syslog (ZSYS_LOGSYSTEM). Safe to
//  call more than once and from any thread, but it starts CZMQ (zsys_init,
//  which installs CZMQ's SIGINT handler unless zsys_handler_set(NULL) came
//  first): call it where CZMQ may start, before threads of the program's
//  own. fq_system_new calls it, so a program calls it only to route lines
//  CZMQ writes before its first system. zconfig's lines are routed from the
//  start in every program that uses fq_system_new: CZMQ has no setting
//  for them, and fq_czmq_log.c replaces the function that prints them.
void fq_czmq_log_route(void);

#endif
