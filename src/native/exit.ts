// _exit(2) from the addon: the process ends without Node's teardown (native/exit_now.h says why).
import { addon } from './addon.js';

export const exitNow: (code: number) => never = (code) => addon.exitNow(code);
