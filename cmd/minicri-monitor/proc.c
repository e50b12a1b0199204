/* minicri-monitor: process identity from /proc. A pid is only a number:
 * once its process is reaped the kernel hands it to the next one. A process
 * is named by its pid and its start time (as internal/proc's Ref is). */
#define _GNU_SOURCE
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int pid_ok(long long pid) { return pid > 1 && pid <= INT_MAX; }

static ssize_t read_proc(pid_t pid, const char *file, char *out, size_t cap)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, out, cap - 1);
	close(fd);
	if (n >= 0)
		out[n] = 0;
	return n;
}

/* stat_start: field 22 of /proc/PID/stat; fields count from the last ')'
 * (the command name may hold spaces and parentheses), which ends field 2. */
static int stat_start(pid_t pid, unsigned long long *start)
{
	char data[2048];
	if (read_proc(pid, "stat", data, sizeof data) <= 0)
		return -1;
	char *p = strrchr(data, ')');
	if (!p)
		return -1;
	int field = 3;
	char *save = NULL;
	for (char *t = strtok_r(p + 1, " ", &save); t; t = strtok_r(NULL, " ", &save), field++) {
		if (field == 22) {
			char *end;
			errno = 0;
			*start = strtoull(t, &end, 10);
			return errno || end == t || *start == 0 ? -1 : 0;
		}
	}
	return -1;
}

/* status_field: the number after "Name:" in /proc/PID/status. */
static int status_field(const char *data, const char *name, long long *v)
{
	size_t nl = strlen(name);
	for (const char *l = data; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, name, nl) == 0 && l[nl] == ':') {
			char *end;
			errno = 0;
			*v = strtoll(l + nl + 1, &end, 10);
			return errno || end == l + nl + 1 ? -1 : 0;
		}
	}
	return -1;
}

int proc_info(pid_t pid, struct pinfo *pi)
{
	char data[4096];
	long long tgid, ppid;
	if (!pid_ok(pid) || read_proc(pid, "status", data, sizeof data) <= 0 || status_field(data, "Tgid", &tgid) != 0 ||
	    status_field(data, "PPid", &ppid) != 0 || stat_start(pid, &pi->start) != 0)
		return -1;
	pi->ppid = (pid_t)ppid;
	pi->leader = tgid == pid;
	return 0;
}

int proc_descends(pid_t pid, pid_t ancestor)
{
	struct pinfo pi;
	for (int depth = 0; depth < 64 && pid_ok(pid); depth++) {
		if (proc_info(pid, &pi) != 0)
			return 0;
		if (pi.ppid == ancestor)
			return 1;
		pid = pi.ppid;
	}
	return 0;
}
