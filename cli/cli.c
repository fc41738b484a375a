/*
 * cli.c - the start every command shares (cli.h): its command line parsed
 * against its option table, --help answered, its operands counted.
 */
#include "cli/cli.h"

#include "base/opt.h"

int cli_parse(const struct cmd_doc *d, int argc, char **argv, const struct cli_operands *ops, int *rc)
{
	int n = opt_parse(d, argc, argv);

	if (n < 0) {
		*rc = opt_exit(n);
		return -1;
	}
	if (ops && n < ops->min) {
		*rc = cli_usage_error(d->name, "%s", ops->too_few);
		return -1;
	}
	if (ops && ops->max != CLI_ANY && n > ops->max) {
		*rc = ops->too_many ? cli_usage_error(d->name, "%s", ops->too_many)
				    : cli_usage_error(d->name, "unexpected argument '%s'", argv[ops->max]);
		return -1;
	}
	return n;
}
