/* tests/unit/test_outfile.c — the one output writer (util/fileio.h): temp file + rename for regular
 * files keeping their mode, 0666 & ~umask for new ones, symbolic links followed, devices and FIFOs
 * written in place and never replaced, every write failure reported, collisions detected. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "util/fileio.h"

static char dir[200];

static const char *in_dir(const char *name)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static int write_text(const char *path, const char *text, Err *e)
{
    OutFile o;
    Status st = outfile_open(&o, path, e);
    if (st) return st;
    fputs(text, o.f);
    return outfile_commit(&o, e);
}

static char *slurp(const char *path)
{
    char *buf = NULL;
    size_t len;
    Err e;
    if (file_read_all(path, &buf, &len, &e)) return NULL;
    return buf;
}

/* Entries left in the scratch directory (temporary files would show here). */
static int entries(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "ls -A %s | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p && fscanf(p, "%d", &n) != 1) n = -1;
    if (p) pclose(p);
    return n;
}

static void test_new_file_mode_follows_umask(void)
{
    Err e;
    mode_t old = umask(027);
    CHECK(write_text(in_dir("new.csv"), "a\n", &e) == ST_OK);
    umask(old);
    struct stat st;
    CHECK(stat(in_dir("new.csv"), &st) == 0);
    CHECK_EQ_INT(st.st_mode & 0777, 0640); /* 0666 & ~027 */
    char *s = slurp(in_dir("new.csv"));
    CHECK_STR(s, "a\n");
    free(s);
    unlink(in_dir("new.csv"));
}

static void test_existing_file_keeps_its_mode(void)
{
    Err e;
    put(in_dir("old.csv"), "old\n");
    chmod(in_dir("old.csv"), 0604);
    mode_t old = umask(077); /* the umask does not apply to a file that exists */
    CHECK(write_text(in_dir("old.csv"), "new\n", &e) == ST_OK);
    umask(old);
    struct stat st;
    CHECK(stat(in_dir("old.csv"), &st) == 0);
    CHECK_EQ_INT(st.st_mode & 0777, 0604);
    char *s = slurp(in_dir("old.csv"));
    CHECK_STR(s, "new\n");
    free(s);
    unlink(in_dir("old.csv"));
    CHECK_EQ_INT(entries(), 0);
}

static void test_abort_and_failure_leave_nothing(void)
{
    Err e;
    OutFile o;
    put(in_dir("keep.csv"), "before\n");
    CHECK(outfile_open(&o, in_dir("keep.csv"), &e) == ST_OK);
    fputs("partial", o.f);
    CHECK_EQ_INT(entries(), 2); /* the target and the temporary file beside it */
    outfile_abort(&o);
    char *s = slurp(in_dir("keep.csv"));
    CHECK_STR(s, "before\n"); /* untouched */
    free(s);
    CHECK_EQ_INT(entries(), 1);
    /* a renderer's write error ends in an abort too */
    CHECK(outfile_open(&o, in_dir("keep.csv"), &e) == ST_OK);
    fputs("partial", o.f);
    CHECK(outfile_finish(&o, err_set(&e, ST_IO, "write error"), &e) == ST_IO);
    s = slurp(in_dir("keep.csv"));
    CHECK_STR(s, "before\n");
    free(s);
    CHECK_EQ_INT(entries(), 1);
    unlink(in_dir("keep.csv"));
}

static void test_symlink_target_is_replaced_not_the_link(void)
{
    Err e;
    put(in_dir("real.csv"), "old\n");
    chmod(in_dir("real.csv"), 0640);
    CHECK(symlink("real.csv", in_dir("link.csv")) == 0);
    CHECK(symlink("link.csv", in_dir("link2.csv")) == 0); /* a chain of two */
    CHECK(write_text(in_dir("link2.csv"), "new\n", &e) == ST_OK);
    struct stat st;
    CHECK(lstat(in_dir("link.csv"), &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(lstat(in_dir("link2.csv"), &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(stat(in_dir("real.csv"), &st) == 0 && (st.st_mode & 0777) == 0640);
    char *s = slurp(in_dir("real.csv"));
    CHECK_STR(s, "new\n");
    free(s);
    /* a dangling link names the file to create */
    CHECK(symlink("made.csv", in_dir("dangling.csv")) == 0);
    CHECK(write_text(in_dir("dangling.csv"), "made\n", &e) == ST_OK);
    CHECK(lstat(in_dir("dangling.csv"), &st) == 0 && S_ISLNK(st.st_mode));
    s = slurp(in_dir("made.csv"));
    CHECK_STR(s, "made\n");
    free(s);
    /* a loop is an error, not a hang */
    CHECK(symlink("loop-b", in_dir("loop-a")) == 0 && symlink("loop-a", in_dir("loop-b")) == 0);
    CHECK(write_text(in_dir("loop-a"), "x", &e) == ST_CANTCREAT);
    CHECK_CONTAINS(e.msg, "symbolic links");
    const char *names[] = {"real.csv", "link.csv", "link2.csv", "dangling.csv", "made.csv", "loop-a", "loop-b"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) unlink(in_dir(names[i]));
    CHECK_EQ_INT(entries(), 0);
}

static void test_devices_are_written_in_place(void)
{
    Err e;
    struct stat before, after;
    CHECK(stat("/dev/null", &before) == 0);
    CHECK(write_text("/dev/null", "discarded\n", &e) == ST_OK);
    CHECK(stat("/dev/null", &after) == 0);
    CHECK(S_ISCHR(after.st_mode) && after.st_ino == before.st_ino && after.st_rdev == before.st_rdev);
    /* a full device: the failure is reported with the reason, and the device stays a device */
    CHECK(stat("/dev/full", &before) == 0);
    CHECK(write_text("/dev/full", "no room\n", &e) == ST_IO);
    CHECK_CONTAINS(e.msg, "/dev/full");
    CHECK_CONTAINS(e.msg, strerror(ENOSPC));
    CHECK(stat("/dev/full", &after) == 0);
    CHECK(S_ISCHR(after.st_mode) && after.st_ino == before.st_ino);
    /* a write error met by a renderer (ferror) is reported the same way */
    OutFile o;
    CHECK(outfile_open(&o, "/dev/full", &e) == ST_OK);
    for (int i = 0; i < 5000; i++) fputs("0123456789", o.f); /* more than one buffer: write(2) fails now */
    CHECK(ferror(o.f));
    CHECK(outfile_finish(&o, err_set(&e, ST_IO, "write error"), &e) == ST_IO);
    CHECK_CONTAINS(e.msg, strerror(ENOSPC));
}

static void test_fifo_is_written_in_place(void)
{
    Err e;
    CHECK(mkfifo(in_dir("pipe"), 0600) == 0);
    pid_t pid = fork();
    if (pid == 0) { /* the reader (a writer that replaced the FIFO would leave it waiting: alarm) */
        alarm(10);
        int fd = open(in_dir("pipe"), O_RDONLY);
        char buf[64] = {0};
        ssize_t n = read(fd, buf, sizeof buf - 1);
        _exit(n == 5 && !strcmp(buf, "data\n") ? 0 : 1);
    }
    CHECK(write_text(in_dir("pipe"), "data\n", &e) == ST_OK);
    int status = -1;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct stat st;
    CHECK(lstat(in_dir("pipe"), &st) == 0 && S_ISFIFO(st.st_mode)); /* still a FIFO */
    OutFile o; /* OUT_NOWAIT: no reader is an error at once (the TUI's export), not a wait */
    CHECK(outfile_open_flags(&o, in_dir("pipe"), OUT_NOWAIT, &e) == ST_CANTCREAT);
    CHECK_CONTAINS(e.msg, "no process is reading this FIFO");
    CHECK(!strstr(e.msg, "waited")); /* it did not wait, so it does not say it waited 10 s */
    unlink(in_dir("pipe"));
    CHECK_EQ_INT(entries(), 0);
}

/* An anonymous pipe (what stdout is in `fp8plan ... -o /dev/stdout | head`): /dev/stdout is a link to
 * /proc/self/fd/1, itself a kernel link whose text "pipe:[inode]" names no file. Reached as /proc/self/fd/N
 * and through a link to that (as /dev/stdout is), it is written in place: the bytes come out of the pipe's
 * read end, and no file is created beside either link. */
static void test_anonymous_pipe_is_written_in_place(void)
{
    int fds[2];
    if (pipe(fds) != 0) {
        CHECKF(0, "pipe: %s", strerror(errno));
        return;
    }
    char proc[64], buf[64] = {0};
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fds[1]);
    if (access(proc, F_OK) != 0) {
        SKIP(test_anonymous_pipe_is_written_in_place, "no /proc/self/fd (not Linux)");
        close(fds[0]), close(fds[1]);
        return;
    }
    Err e = {0};
    CHECKF(write_text(proc, "one\n", &e) == ST_OK, "%s", e.msg);
    CHECK(symlink(proc, in_dir("stdout")) == 0);
    CHECKF(write_text(in_dir("stdout"), "two\n", &e) == ST_OK, "%s", e.msg);
    CHECK(outfile_check(in_dir("stdout"), &e) == ST_OK);
    fcntl(fds[0], F_SETFL, O_NONBLOCK); /* nothing written must fail the check, not hang on the read */
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    CHECK(n == 8 && !strcmp(buf, "one\ntwo\n"));
    struct stat st;
    CHECK(lstat(in_dir("stdout"), &st) == 0 && S_ISLNK(st.st_mode)); /* the link is left as it was */
    unlink(in_dir("stdout"));
    close(fds[0]), close(fds[1]);
    CHECK_EQ_INT(entries(), 0);
    /* a dangling link still names the file to create (the kernel's links are the ones that open) */
    CHECK(symlink("missing", in_dir("dangling")) == 0);
    CHECK(write_text(in_dir("dangling"), "new\n", &e) == ST_OK);
    char *got = slurp(in_dir("missing"));
    CHECK(got && !strcmp(got, "new\n"));
    free(got);
    unlink(in_dir("dangling")), unlink(in_dir("missing"));
    CHECK_EQ_INT(entries(), 0);
}

static void test_refusals(void)
{
    Err e;
    OutFile o;
    CHECK(outfile_open(&o, "", &e) == ST_USAGE);
    CHECK(outfile_open(&o, dir, &e) == ST_CANTCREAT);
    CHECK_CONTAINS(e.msg, "directory");
    CHECK(outfile_open(&o, in_dir("missing/x.csv"), &e) == ST_CANTCREAT);
    CHECK_CONTAINS(e.msg, "missing/x.csv");
    CHECK(outfile_check(in_dir("missing/x.csv"), &e) == ST_CANTCREAT);
    CHECK(outfile_check(in_dir("fine.csv"), &e) == ST_OK);
    CHECK(outfile_check("/dev/null", &e) == ST_OK);
    CHECK(outfile_check("-", &e) == ST_OK);
    CHECK(outfile_check(dir, &e) == ST_CANTCREAT);
    CHECK_EQ_INT(entries(), 0); /* checks create nothing */
    if (geteuid() != 0) {       /* root may write anywhere */
        put(in_dir("ro.csv"), "ro\n");
        chmod(in_dir("ro.csv"), 0444);
        CHECK(outfile_open(&o, in_dir("ro.csv"), &e) == ST_CANTCREAT);
        unlink(in_dir("ro.csv"));
    }
}

static void test_same_file(void)
{
    put(in_dir("a.csv"), "a\n");
    CHECK(symlink("a.csv", in_dir("to-a")) == 0);
    CHECK(link(in_dir("a.csv"), in_dir("hard-a")) == 0);
    CHECK(path_same_file(in_dir("a.csv"), in_dir("a.csv")));
    CHECK(path_same_file(in_dir("a.csv"), in_dir("to-a")));
    CHECK(path_same_file(in_dir("hard-a"), in_dir("to-a")));
    CHECK(!path_same_file(in_dir("a.csv"), in_dir("b.csv")));
    /* files that do not exist yet: the same directory and name */
    char dotted[300];
    snprintf(dotted, sizeof dotted, "%s/./new.csv", dir);
    CHECK(path_same_file(in_dir("new.csv"), dotted));
    CHECK(!path_same_file(in_dir("new.csv"), in_dir("new2.csv")));
    CHECK(!path_same_file("/dev/null", "/dev/null")); /* devices never collide */
    CHECK(!path_same_file("-", "-"));
    unlink(in_dir("a.csv"));
    unlink(in_dir("to-a"));
    unlink(in_dir("hard-a"));
}

static void test_durable_and_stdout(void)
{
    Err e;
    OutFile o;
    CHECK(outfile_open_flags(&o, in_dir("ckpt"), OUT_DURABLE, &e) == ST_OK);
    fputs("state", o.f);
    CHECK(outfile_commit(&o, &e) == ST_OK);
    char *s = slurp(in_dir("ckpt"));
    CHECK_STR(s, "state");
    free(s);
    unlink(in_dir("ckpt"));
    CHECK(outfile_open(&o, "-", &e) == ST_OK);
    CHECK(o.f == stdout && o.kind == OUT_STDOUT);
    CHECK(outfile_commit(&o, &e) == ST_OK);
}

/* SIGTERM while a temporary file is open removes it (nobody else handles the signal here). */
static void test_signal_removes_the_temporary_file(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        Err e;
        OutFile o;
        if (outfile_open(&o, in_dir("killed.csv"), &e)) _exit(2);
        fputs("partial", o.f);
        fflush(o.f);
        raise(SIGTERM);
        _exit(3);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    CHECK_EQ_INT(entries(), 0);
}

/* A group lands whole: while it is open each commit keeps its temporary file (the targets stay old),
 * outfile_group_end(1) puts them all in place, (0) removes them, and a fatal signal before the end
 * removes them too (issue 46: a second SIGTERM during a run's write-out left a new loss log beside the
 * old checkpoint and report). */
static void test_group_lands_whole(void)
{
    Err e;
    put(in_dir("loss.csv"), "old loss\n");
    put(in_dir("report.csv"), "old report\n");
    outfile_group_begin();
    CHECK(write_text(in_dir("loss.csv"), "new loss\n", &e) == ST_OK);
    CHECK(write_text(in_dir("report.csv"), "new report\n", &e) == ST_OK);
    char *a = slurp(in_dir("loss.csv")), *b = slurp(in_dir("report.csv"));
    CHECK_STR(a, "old loss\n"); /* committed to the group, not yet in place */
    CHECK_STR(b, "old report\n");
    free(a), free(b);
    CHECK_EQ_INT(entries(), 4); /* two targets, two temporary files */
    CHECK(outfile_group_end(0, &e) == ST_OK);
    a = slurp(in_dir("loss.csv")), b = slurp(in_dir("report.csv"));
    CHECK_STR(a, "old loss\n");
    CHECK_STR(b, "old report\n");
    free(a), free(b);
    CHECK_EQ_INT(entries(), 2);

    outfile_group_begin();
    CHECK(write_text(in_dir("loss.csv"), "new loss\n", &e) == ST_OK);
    CHECK(write_text(in_dir("report.csv"), "new report\n", &e) == ST_OK);
    CHECK(outfile_group_end(1, &e) == ST_OK);
    a = slurp(in_dir("loss.csv")), b = slurp(in_dir("report.csv"));
    CHECK_STR(a, "new loss\n");
    CHECK_STR(b, "new report\n");
    free(a), free(b);
    CHECK_EQ_INT(entries(), 2);
    CHECK(write_text(in_dir("loss.csv"), "after\n", &e) == ST_OK); /* no group: in place at once */
    a = slurp(in_dir("loss.csv"));
    CHECK_STR(a, "after\n");
    free(a);

    pid_t pid = fork();
    if (pid == 0) { /* a signal between the group's commits and its end: nothing new lands */
        outfile_group_begin();
        if (write_text(in_dir("loss.csv"), "killed\n", &e) || write_text(in_dir("report.csv"), "killed\n", &e))
            _exit(2);
        raise(SIGTERM);
        _exit(3);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    a = slurp(in_dir("loss.csv")), b = slurp(in_dir("report.csv"));
    CHECK_STR(a, "after\n");
    CHECK_STR(b, "new report\n");
    free(a), free(b);
    CHECK_EQ_INT(entries(), 2);
    unlink(in_dir("loss.csv"));
    unlink(in_dir("report.csv"));
}

static void test_nothing_left_behind(void) { CHECK(rmdir(dir) == 0); }

int main(void)
{
    snprintf(dir, sizeof dir, "%.150s/fp8plan-outfile-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    RUN(test_new_file_mode_follows_umask);
    RUN(test_existing_file_keeps_its_mode);
    RUN(test_abort_and_failure_leave_nothing);
    RUN(test_symlink_target_is_replaced_not_the_link);
    RUN(test_devices_are_written_in_place);
    RUN(test_fifo_is_written_in_place);
    RUN(test_anonymous_pipe_is_written_in_place);
    RUN(test_refusals);
    RUN(test_same_file);
    RUN(test_durable_and_stdout);
    RUN(test_signal_removes_the_temporary_file);
    RUN(test_group_lands_whole);
    RUN(test_nothing_left_behind);
    return test_summary();
}
