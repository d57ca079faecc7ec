/** The platform admin's password in every test database made from the template (and in buildTestApp). */
export const ADMIN_PASSWORD = 'admin-password-1';
