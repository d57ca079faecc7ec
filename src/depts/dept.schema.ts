import { Type, type Static } from '@sinclair/typebox';
import { DelFlagInput, EntityIdQuery, Status } from '../core/common.schema.js';
import { DEPT_NAME_MAX } from '../core/limits.js';
import { propertiesOf } from '../db/fields.js';
import { DEPT_FIELDS } from './dept.fields.js';

/** DeptDTO as read: one schema (from dept.fields.ts), from which the write variants below are derived. */
export const Dept = Type.Object(propertiesOf(DEPT_FIELDS), {
  $id: 'Dept',
  examples: [
    {
      deptId: 101,
      parentId: 100,
      ancestors: '0,100',
      deptName: 'Sales',
      orderNum: 1,
      leader: 'Li Lei',
      phone: '+86 10 5555 0101',
      email: 'sales@example.com',
      status: '0',
      delFlag: '0',
      tenantId: '000000',
      createBy: 'admin',
      createTime: '2026-01-05 09:30:00',
      updateBy: '',
      updateTime: null,
    },
  ],
});

// Optional on create and update; when omitted the server uses the default
// (orderNum 0, status "0", the rest null): that is what makes PUT a full replacement.
const optionalWithDefaults = Type.Object({
  orderNum: Type.Optional(Type.Integer({ ...Dept.properties.orderNum, default: 0 })),
  leader: Type.Optional(Dept.properties.leader),
  phone: Type.Optional(Dept.properties.phone),
  email: Type.Optional(Dept.properties.email),
  status: Type.Optional(Status),
  delFlag: Type.Optional(DelFlagInput),
  tenantId: Type.Optional(Dept.properties.tenantId),
});

/** POST body: DeptDTO without deptId, ancestors and audit fields. */
export const DeptCreate = Type.Composite([Type.Pick(Dept, ['parentId', 'deptName']), optionalWithDefaults], {
  $id: 'DeptCreate',
  examples: [{ parentId: 100, deptName: 'Sales', orderNum: 1, leader: 'Li Lei', email: 'sales@example.com' }],
});

/** PUT body: a full replacement, so omitted optional fields return to their defaults. */
export const DeptUpdate = Type.Composite([Type.Pick(Dept, ['deptId', 'parentId', 'deptName']), optionalWithDefaults], {
  $id: 'DeptUpdate',
  examples: [{ deptId: 101, parentId: 0, deptName: 'Sales', orderNum: 1, leader: 'Li Lei', status: '0' }],
});

export const DeptListQuery = Type.Object({
  deptName: Type.Optional(Type.String({ maxLength: DEPT_NAME_MAX, description: 'Substring match' })),
  status: Type.Optional(Status),
  parentId: Type.Optional(EntityIdQuery(0)),
});

export const DeptList = Type.Array(Type.Ref('Dept'));

export const DeptNode = Type.Recursive((Node) => Type.Object({ ...Dept.properties, children: Type.Array(Node) }), { $id: 'DeptNode' });
export const DeptTree = Type.Array(Type.Ref('DeptNode'));

export type Dept = Static<typeof Dept>;
export type DeptCreate = Static<typeof DeptCreate>;
export type DeptUpdate = Static<typeof DeptUpdate>;
export type DeptListQuery = Static<typeof DeptListQuery>;
export type DeptNode = Dept & { children: DeptNode[] };
