/** LIKE pattern for a substring, with the user's own % and _ (and \) taken literally. */
export const containing = (text: string) => `%${text.replace(/[\\%_]/g, '\\$&')}%`;
