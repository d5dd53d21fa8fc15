/*
 * sluice-pmix: one node's PMIx server for a step started by `srun --mpi=pmix`.
 *
 * Open MPI (4.x, 5.x) and other PMIx clients find their peers through a
 * PMIx server on their node, as slurmstepd's mpi/pmix plugin gives them.
 * Sluice's launcher is a Go binary copied into the job's image; this
 * helper is the part that must link the PMIx library (libpmix.so.2, which
 * every Open MPI install carries), so it is a separate program the
 * launcher starts next to the step's tasks and talks to over two pipes:
 *
 *   argv:  --nspace NS --jobid JOB.STEP --node K --hosts h0,h1,...
 *          --ranks "0,1;2,3" (the ranks on each host, ';' between hosts)
 *          --tmpdir DIR (this node's rendezvous directory, empty)
 *   out:   "env RANK NAME=VALUE"  a variable rank's process must get
 *          "ready"                every local rank's variables are out
 *          "fence N HEX"          the node's contribution to fence N, once
 *                                 every local rank entered it
 *          "abort RANK STATUS MSG"  a rank called PMIx_Abort
 *          "error MSG"            the server could not start
 *   in:    "fenced N HEX"         every node's contributions to fence N,
 *                                 in node order: the fence completes
 *   EOF on stdin ends the server.
 *
 * The launcher relays fences across nodes through srun (pmi_fence.go), as
 * it does for PMI-2. Every fence here is a fence of the whole step: PMIx
 * fences over a subset of ranks, and direct modex requests (data not
 * collected in a fence) are answered "not supported".
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pmix.h>
#include <pmix_server.h>

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

/* say writes one line to the launcher. */
static void say(const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&out_mu);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	pthread_mutex_unlock(&out_mu);
}

static void fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	say("error %s", msg);
	exit(1);
}

static char nspace[PMIX_MAX_NSLEN + 1];
static int nranks;      /* ranks in the step */

/* Fences the launcher has not completed yet: one at a time per node. */
static pthread_mutex_t fence_mu = PTHREAD_MUTEX_INITIALIZER;
static int fence_seq;
static pmix_modex_cbfunc_t fence_cb;
static void *fence_cbdata;

static void release_buf(void *cbdata) { free(cbdata); }

static const char hexdigits[] = "0123456789abcdef";

static pmix_status_t fence_nb(const pmix_proc_t procs[], size_t nprocs,
			      const pmix_info_t info[], size_t ninfo,
			      char *data, size_t ndata,
			      pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
	(void)info;
	(void)ninfo;
	/* Only the whole step: its namespace's wildcard, or every rank of it. */
	int whole = nprocs == (size_t)nranks;
	for (size_t i = 0; i < nprocs; i++) {
		if (strcmp(procs[i].nspace, nspace) != 0)
			whole = 0;
		if (procs[i].rank == PMIX_RANK_WILDCARD && nprocs == 1 &&
		    strcmp(procs[i].nspace, nspace) == 0)
			whole = 1;
	}
	if (!whole) {
		fprintf(stderr, "sluice-pmix: a fence over %zu of the step's %d ranks: only fences of the whole step are supported\n",
			nprocs, nranks);
		return PMIX_ERR_NOT_SUPPORTED;
	}
	char *hex = malloc(2 * ndata + 1);
	if (hex == NULL)
		return PMIX_ERR_NOMEM;
	for (size_t i = 0; i < ndata; i++) {
		hex[2 * i] = hexdigits[(unsigned char)data[i] >> 4];
		hex[2 * i + 1] = hexdigits[(unsigned char)data[i] & 15];
	}
	hex[2 * ndata] = 0;
	pthread_mutex_lock(&fence_mu);
	if (fence_cb != NULL) {
		pthread_mutex_unlock(&fence_mu);
		free(hex);
		fprintf(stderr, "sluice-pmix: a second fence before the first completed\n");
		return PMIX_ERR_NOT_SUPPORTED;
	}
	fence_cb = cbfunc;
	fence_cbdata = cbdata;
	int n = ++fence_seq;
	pthread_mutex_unlock(&fence_mu);
	say("fence %d %s", n, hex);
	free(hex);
	return PMIX_SUCCESS;
}

static int unhex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* fenced completes fence n with the step's data, hex-encoded. */
static void fenced(int n, const char *hex)
{
	size_t len = strlen(hex);
	char *buf = malloc(len / 2 + 1);
	if (buf == NULL || len % 2 != 0)
		fail("fence %d: bad data from the launcher", n);
	for (size_t i = 0; i < len / 2; i++) {
		int hi = unhex(hex[2 * i]), lo = unhex(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			fail("fence %d: bad data from the launcher", n);
		buf[i] = (char)(hi << 4 | lo);
	}
	pthread_mutex_lock(&fence_mu);
	pmix_modex_cbfunc_t cb = fence_cb;
	void *cbdata = fence_cbdata;
	int seq = fence_seq;
	fence_cb = NULL;
	pthread_mutex_unlock(&fence_mu);
	if (cb == NULL || seq != n)
		fail("fence %d completed, but this node is in fence %d", n, cb == NULL ? 0 : seq);
	cb(PMIX_SUCCESS, buf, len / 2, cbdata, release_buf, buf);
}

static pmix_status_t direct_modex(const pmix_proc_t *proc, const pmix_info_t info[], size_t ninfo,
				  pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
	(void)info;
	(void)ninfo;
	(void)cbfunc;
	(void)cbdata;
	fprintf(stderr, "sluice-pmix: rank %u asked for data outside a fence (direct modex): not supported\n", proc->rank);
	return PMIX_ERR_NOT_SUPPORTED;
}

static pmix_status_t abort_fn(const pmix_proc_t *proc, void *server_object, int status,
			      const char msg[], pmix_proc_t procs[], size_t nprocs,
			      pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	(void)server_object;
	(void)procs;
	(void)nprocs;
	(void)cbfunc;
	(void)cbdata;
	char clean[256] = "PMIx abort";
	if (msg != NULL && msg[0] != 0) {
		snprintf(clean, sizeof clean, "%s", msg);
		for (char *p = clean; *p; p++)
			if (*p == '\n' || *p == '\r')
				*p = ' ';
	}
	say("abort %u %d %s", proc->rank, status, clean);
	/* The launcher ends the step; the rank waits for its signal. */
	return PMIX_OPERATION_SUCCEEDED;
}

static pmix_status_t client_finalized(const pmix_proc_t *proc, void *server_object,
				      pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	(void)proc;
	(void)server_object;
	(void)cbfunc;
	(void)cbdata;
	return PMIX_OPERATION_SUCCEEDED;
}

static pmix_server_module_t module = {
	.client_finalized = client_finalized,
	.abort = abort_fn,
	.fence_nb = fence_nb,
	.direct_modex = direct_modex,
};

static volatile int registered;

static void op_done(pmix_status_t status, void *cbdata)
{
	*(pmix_status_t *)cbdata = status;
	__atomic_store_n(&registered, 1, __ATOMIC_RELEASE);
}

static pmix_status_t wait_op(pmix_status_t rc, pmix_status_t *result)
{
	if (rc == PMIX_OPERATION_SUCCEEDED)
		return PMIX_SUCCESS;
	if (rc != PMIX_SUCCESS)
		return rc;
	while (!__atomic_load_n(&registered, __ATOMIC_ACQUIRE))
		usleep(1000);
	return *result;
}

/* Split s at sep into at most max parts, in place. */
static int split(char *s, char sep, char **parts, int max)
{
	int n = 0;
	if (*s == 0)
		return 0;
	while (n < max) {
		parts[n++] = s;
		char *p = strchr(s, sep);
		if (p == NULL)
			break;
		*p = 0;
		s = p + 1;
	}
	return n;
}

#define MAX_NODES 4096
#define MAX_RANKS 65536

static pmix_info_t *info_at(pmix_info_t *a, size_t *n, const char *key)
{
	pmix_info_t *i = &a[(*n)++];
	PMIX_LOAD_KEY(i->key, key);
	return i;
}

static void set_u32(pmix_info_t *a, size_t *n, const char *key, uint32_t v)
{
	PMIX_VALUE_LOAD(&info_at(a, n, key)->value, &v, PMIX_UINT32);
}

static void set_str(pmix_info_t *a, size_t *n, const char *key, const char *v)
{
	PMIX_VALUE_LOAD(&info_at(a, n, key)->value, v, PMIX_STRING);
}

int main(int argc, char **argv)
{
	const char *jobid = NULL, *hosts_arg = NULL, *ranks_arg = NULL, *tmpdir = NULL;
	int node = -1;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--nspace") == 0)
			snprintf(nspace, sizeof nspace, "%s", argv[i + 1]);
		else if (strcmp(argv[i], "--jobid") == 0)
			jobid = argv[i + 1];
		else if (strcmp(argv[i], "--node") == 0)
			node = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--hosts") == 0)
			hosts_arg = argv[i + 1];
		else if (strcmp(argv[i], "--ranks") == 0)
			ranks_arg = argv[i + 1];
		else if (strcmp(argv[i], "--tmpdir") == 0)
			tmpdir = argv[i + 1];
		else
			fail("unknown argument %s", argv[i]);
	}
	if (!nspace[0] || jobid == NULL || hosts_arg == NULL || ranks_arg == NULL || tmpdir == NULL || node < 0)
		fail("usage: sluice-pmix --nspace NS --jobid JOB.STEP --node K --hosts H,... --ranks R,..;.. --tmpdir DIR");

	static char *hosts[MAX_NODES], *pernode[MAX_NODES];
	char *hosts_buf = strdup(hosts_arg), *ranks_buf = strdup(ranks_arg);
	int nhosts = split(hosts_buf, ',', hosts, MAX_NODES);
	int nper = split(ranks_buf, ';', pernode, MAX_NODES);
	if (nhosts != nper || node >= nhosts)
		fail("%d hosts, %d rank lists, node %d", nhosts, nper, node);
	static int host_of[MAX_RANKS], local_of[MAX_RANKS];
	int local[MAX_RANKS], nlocal = 0;
	nranks = 0;
	for (int h = 0; h < nhosts; h++) {
		char *list = strdup(pernode[h]), *r[MAX_RANKS / 16];
		int k = split(list, ',', r, MAX_RANKS / 16);
		for (int j = 0; j < k; j++) {
			int rank = atoi(r[j]);
			if (rank < 0 || rank >= MAX_RANKS)
				fail("rank %s", r[j]);
			host_of[rank] = h;
			local_of[rank] = j;
			if (h == node)
				local[nlocal++] = rank;
			nranks++;
		}
		free(list);
	}

	/* The server's rendezvous files go in this node's own directory; the
	   hash store keeps job data in the server (no shared-memory segments
	   a container might not allow). */
	setenv("PMIX_MCA_gds", "hash", 0);
	pmix_info_t sinfo[4];
	size_t ns = 0;
	set_str(sinfo, &ns, PMIX_SERVER_TMPDIR, tmpdir);
	set_str(sinfo, &ns, PMIX_SYSTEM_TMPDIR, tmpdir);
	set_u32(sinfo, &ns, PMIX_SERVER_RANK, (uint32_t)node);
	set_str(sinfo, &ns, PMIX_HOSTNAME, hosts[node]);
	pmix_status_t rc = PMIx_server_init(&module, sinfo, ns);
	if (rc != PMIX_SUCCESS)
		fail("PMIx_server_init: %s", PMIx_Error_string(rc));

	/* The hosts, comma-separated, for the node map. */
	char *nodemap = NULL, *procmap = NULL;
	if ((rc = PMIx_generate_regex(hosts_arg, &nodemap)) != PMIX_SUCCESS)
		fail("PMIx_generate_regex: %s", PMIx_Error_string(rc));
	if ((rc = PMIx_generate_ppn(ranks_arg, &procmap)) != PMIX_SUCCESS)
		fail("PMIx_generate_ppn: %s", PMIx_Error_string(rc));

	size_t ninfo = 0, cap = 16 + (size_t)nranks;
	pmix_info_t *info;
	PMIX_INFO_CREATE(info, cap);
	set_u32(info, &ninfo, PMIX_UNIV_SIZE, (uint32_t)nranks);
	set_u32(info, &ninfo, PMIX_JOB_SIZE, (uint32_t)nranks);
	set_u32(info, &ninfo, PMIX_MAX_PROCS, (uint32_t)nranks);
	set_u32(info, &ninfo, PMIX_NUM_NODES, (uint32_t)nhosts);
	set_u32(info, &ninfo, PMIX_LOCAL_SIZE, (uint32_t)nlocal);
	set_u32(info, &ninfo, PMIX_NODE_SIZE, (uint32_t)nlocal);
	set_u32(info, &ninfo, PMIX_JOB_NUM_APPS, 1);
	set_str(info, &ninfo, PMIX_JOBID, jobid);
	set_str(info, &ninfo, PMIX_NODE_MAP, nodemap);
	set_str(info, &ninfo, PMIX_PROC_MAP, procmap);
	set_str(info, &ninfo, PMIX_LOCAL_PEERS, pernode[node]);
	set_str(info, &ninfo, PMIX_TMPDIR, tmpdir);
	set_str(info, &ninfo, PMIX_NSDIR, tmpdir);
	uint32_t leader = nlocal > 0 ? (uint32_t)local[0] : 0;
	for (int i = 1; i < nlocal; i++)
		if ((uint32_t)local[i] < leader)
			leader = (uint32_t)local[i];
	set_u32(info, &ninfo, PMIX_LOCALLDR, leader);
	for (int r = 0; r < nranks; r++) {
		pmix_data_array_t *d;
		size_t np = 0;
		int here = host_of[r] == node;
		PMIX_DATA_ARRAY_CREATE(d, here ? 9 : 7, PMIX_INFO);
		pmix_info_t *p = d->array;
		pmix_rank_t rank = (pmix_rank_t)r, zero = 0;
		uint32_t appnum = 0, nodeid = (uint32_t)host_of[r];
		PMIX_VALUE_LOAD(&info_at(p, &np, PMIX_RANK)->value, &rank, PMIX_PROC_RANK);
		PMIX_VALUE_LOAD(&info_at(p, &np, PMIX_APPNUM)->value, &appnum, PMIX_UINT32);
		PMIX_VALUE_LOAD(&info_at(p, &np, PMIX_APPLDR)->value, &zero, PMIX_PROC_RANK);
		PMIX_VALUE_LOAD(&info_at(p, &np, PMIX_GLOBAL_RANK)->value, &rank, PMIX_PROC_RANK);
		PMIX_VALUE_LOAD(&info_at(p, &np, PMIX_APP_RANK)->value, &rank, PMIX_PROC_RANK);
		PMIX_VALUE_LOAD(&info_at(p, &np, PMIX_NODEID)->value, &nodeid, PMIX_UINT32);
		set_str(p, &np, PMIX_HOSTNAME, hosts[host_of[r]]);
		if (here) {
			uint16_t lr = (uint16_t)local_of[r];
			PMIX_VALUE_LOAD(&info_at(p, &np, PMIX_LOCAL_RANK)->value, &lr, PMIX_UINT16);
			PMIX_VALUE_LOAD(&info_at(p, &np, PMIX_NODE_RANK)->value, &lr, PMIX_UINT16);
		}
		d->size = np;
		pmix_info_t *pd = info_at(info, &ninfo, PMIX_PROC_DATA);
		pd->value.type = PMIX_DATA_ARRAY;
		pd->value.data.darray = d;
	}

	pmix_status_t result = PMIX_SUCCESS;
	registered = 0;
	rc = wait_op(PMIx_server_register_nspace(nspace, nlocal, info, ninfo, op_done, &result), &result);
	if (rc != PMIX_SUCCESS)
		fail("PMIx_server_register_nspace: %s", PMIx_Error_string(rc));
	for (int i = 0; i < nlocal; i++) {
		pmix_proc_t proc;
		PMIX_PROC_LOAD(&proc, nspace, (pmix_rank_t)local[i]);
		registered = 0;
		rc = wait_op(PMIx_server_register_client(&proc, getuid(), getgid(), NULL, op_done, &result), &result);
		if (rc != PMIX_SUCCESS)
			fail("PMIx_server_register_client %d: %s", local[i], PMIx_Error_string(rc));
		char **env = NULL;
		if ((rc = PMIx_server_setup_fork(&proc, &env)) != PMIX_SUCCESS)
			fail("PMIx_server_setup_fork %d: %s", local[i], PMIx_Error_string(rc));
		for (char **e = env; e != NULL && *e != NULL; e++)
			if (strchr(*e, '\n') == NULL)
				say("env %d %s", local[i], *e);
	}
	say("ready");

	char *line = NULL;
	size_t linecap = 0;
	ssize_t len;
	while ((len = getline(&line, &linecap, stdin)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = 0;
		int n;
		char *sp;
		if (sscanf(line, "fenced %d", &n) == 1 && (sp = strchr(line + 7, ' ')) != NULL)
			fenced(n, sp + 1);
		else if (strncmp(line, "fenced ", 7) == 0)
			fenced(atoi(line + 7), "");
		else
			fprintf(stderr, "sluice-pmix: unknown request %.40s\n", line);
	}
	PMIx_server_finalize();
	return 0;
}
