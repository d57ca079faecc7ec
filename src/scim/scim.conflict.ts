import { AppError } from '../core/app.error.js';

/**
 * A SCIM write refused by what is already stored: a name another resource
 * holds (`uniqueness`), or a resource that cannot be changed that way as it
 * stands (`mutability`: a group with child departments). A 409 like any other
 * rule's refusal, thrown by the SQL modules (scim.user.sql.ts,
 * scim.group.sql.ts); it carries which conflict it is because SCIM names the
 * two apart, and the edge (scim.plugin.ts) answers it with that `scimType`.
 */
export class ScimConflict extends AppError {
  constructor(
    readonly conflict: 'uniqueness' | 'mutability',
    message: string,
  ) {
    super(409, message);
    this.name = 'ScimConflict';
  }
}
