/* main.c -- placeholder entry point, replaced by the daemon start-up. */
#include "config.h"
#include <stdio.h>
int
main(void)
{
  puts(PACKAGE_STRING);
  return 0;
}
