/*
 * minicri-pause: the process that holds a pod's namespaces.
 *
 *   minicri-pause [-h hostname] [-s key=value]...
 *
 * It runs inside the pod's network, IPC, UTS (and, when it has its own, PID)
 * namespaces. Before it reports ready it applies the pod's namespaced sysctls
 * (they land in the namespaces it is in) and sets the hostname. Readiness is
 * reported on fd 3 when that fd is open: the byte 'R' on success, or an error
 * message followed by exit(1). Afterwards it reaps every child it inherits
 * (it is PID 1 of a shared PID namespace) and exits on SIGTERM or SIGINT.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define READY_FD 3

static void fail(const char *what, const char *arg)
{
	char msg[512];
	int n = snprintf(msg, sizeof msg, "%s %s: %s", what, arg, strerror(errno));
	if (n > 0 && write(READY_FD, msg, (size_t)n) < 0)
		(void)0;
	_exit(1);
}

static void set_sysctl(const char *kv)
{
	char path[512] = "/proc/sys/";
	const char *eq = strchr(kv, '=');
	size_t klen, off = strlen(path);
	if (!eq || eq == kv) {
		errno = EINVAL;
		fail("sysctl", kv);
	}
	klen = (size_t)(eq - kv);
	if (off + klen >= sizeof path) {
		errno = ENAMETOOLONG;
		fail("sysctl", kv);
	}
	for (size_t i = 0; i < klen; i++)
		path[off + i] = kv[i] == '.' ? '/' : kv[i];
	path[off + klen] = '\0';
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		fail("sysctl", kv);
	const char *val = eq + 1;
	if (write(fd, val, strlen(val)) < 0)
		fail("sysctl", kv);
	close(fd);
}

static void on_term(int sig)
{
	(void)sig;
	_exit(0);
}

static void on_chld(int sig)
{
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_chld;
	sa.sa_flags = SA_NOCLDSTOP | SA_RESTART;
	sigaction(SIGCHLD, &sa, NULL);

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-s") && i + 1 < argc) {
			set_sysctl(argv[++i]);
		} else if (!strcmp(argv[i], "-h") && i + 1 < argc) {
			const char *h = argv[++i];
			if (sethostname(h, strlen(h)) < 0)
				fail("sethostname", h);
		} else {
			errno = EINVAL;
			fail("argument", argv[i]);
		}
	}
	if (fcntl(READY_FD, F_GETFD) >= 0) {
		if (write(READY_FD, "R", 1) < 0)
			(void)0;
		close(READY_FD);
	}
	for (;;)
		pause();
}
