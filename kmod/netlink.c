// SPDX-License-Identifier: GPL-2.0-only
/*
 * kxfer: the "kxfer" generic netlink family, the control plane.
 *
 * Documentation/netlink/kxfer.yaml describes it; keep the policies and
 * operations here in line with it.  Every operation has a strict policy
 * of its own, mutations need CAP_NET_ADMIN (GENL_ADMIN_PERM), every
 * refusal carries an extack message, and changes are announced to the
 * "monitor" multicast group.
 */
#include <linux/rwsem.h>
#include <linux/numa.h>
#include <linux/ctype.h>
#include <linux/netdevice.h>
#include <net/genetlink.h>
#include <rdma/ib_cache.h>

#include "kxfer.h"

static struct genl_family kxfer_genl_family;

/* Held for reading while announcing, for writing while (un)registering. */
static DECLARE_RWSEM(kxfer_nl_rwsem);
static bool kxfer_nl_ready;

/* ---------------------------------------------------------------------- */
/* Policies                                                                */
/* ---------------------------------------------------------------------- */

static const struct nla_policy kxfer_prefix_policy[KXFER_A_PREFIX_MAX + 1] = {
	[KXFER_A_PREFIX_ADDR]	= NLA_POLICY_RANGE(NLA_BINARY, 4, 16),
	[KXFER_A_PREFIX_LEN]	= NLA_POLICY_MAX(NLA_U8, 128),
};

static const struct nla_policy kxfer_dev_get_policy[KXFER_A_DEV_MAX + 1] = {
	[KXFER_A_DEV_NAME] = { .type = NLA_NUL_STRING,
			       .len = IB_DEVICE_NAME_MAX - 1 },
};

static const struct nla_policy kxfer_pool_new_policy[KXFER_A_POOL_MAX + 1] = {
	[KXFER_A_POOL_NAME]	 = { .type = NLA_NUL_STRING,
				     .len = KXFER_NAME_MAX - 1 },
	[KXFER_A_POOL_SIZE]	 = { .type = NLA_U64 },
	[KXFER_A_POOL_OWNER]	 = { .type = NLA_U32 },
	[KXFER_A_POOL_GROUP]	 = { .type = NLA_U32 },
	[KXFER_A_POOL_MODE]	 = NLA_POLICY_MAX(NLA_U32, 0777),
	[KXFER_A_POOL_NUMA_NODE] = NLA_POLICY_RANGE(NLA_S32, NUMA_NO_NODE,
						    MAX_NUMNODES - 1),
	[KXFER_A_POOL_NEAR]	 = { .type = NLA_NUL_STRING,
				     .len = KXFER_DEV_NAME_MAX - 1 },
};

static const struct nla_policy kxfer_pool_name_policy[KXFER_A_POOL_MAX + 1] = {
	[KXFER_A_POOL_NAME]	 = { .type = NLA_NUL_STRING,
				     .len = KXFER_NAME_MAX - 1 },
};

static const struct nla_policy
kxfer_export_new_policy[KXFER_A_EXPORT_MAX + 1] = {
	[KXFER_A_EXPORT_NAME]	= { .type = NLA_NUL_STRING,
				    .len = KXFER_NAME_MAX - 1 },
	[KXFER_A_EXPORT_POOL]	= { .type = NLA_NUL_STRING,
				    .len = KXFER_NAME_MAX - 1 },
	[KXFER_A_EXPORT_OFFSET]	= { .type = NLA_U64 },
	[KXFER_A_EXPORT_LEN]	= { .type = NLA_U64 },
	[KXFER_A_EXPORT_FROM]	= NLA_POLICY_NESTED(kxfer_prefix_policy),
	[KXFER_A_EXPORT_PEER]	= { .type = NLA_NUL_STRING,
				    .len = KXFER_NAME_MAX - 1 },
	[KXFER_A_EXPORT_ACCESS]	= NLA_POLICY_MASK(NLA_U32, KXFER_ACCESS_ALL),
	[KXFER_A_EXPORT_AUTH]	= NLA_POLICY_MAX(NLA_U32, KXFER_AUTH_REQUIRED),
};

static const struct nla_policy
kxfer_export_name_policy[KXFER_A_EXPORT_MAX + 1] = {
	[KXFER_A_EXPORT_NAME]	= { .type = NLA_NUL_STRING,
				    .len = KXFER_NAME_MAX - 1 },
};

static const struct nla_policy kxfer_listen_policy[KXFER_A_LISTEN_MAX + 1] = {
	[KXFER_A_LISTEN_ADDR]	= NLA_POLICY_RANGE(NLA_BINARY, 4, 16),
	[KXFER_A_LISTEN_PORT]	= NLA_POLICY_MIN(NLA_U16, 1),
	[KXFER_A_LISTEN_ALLOW]	= NLA_POLICY_NESTED(kxfer_prefix_policy),
	[KXFER_A_LISTEN_KEY]	= { .type = NLA_NUL_STRING,
				    .len = KXFER_NAME_MAX - 1 },
	[KXFER_A_LISTEN_AUTH]	= NLA_POLICY_MAX(NLA_U32, KXFER_AUTH_REQUIRED),
	[KXFER_A_LISTEN_POLL]	= { .type = NLA_FLAG },
};

/* A rail of peer add: its address, and a port if not the peer's */
static const struct nla_policy kxfer_rail_policy[KXFER_A_RAIL_MAX + 1] = {
	[KXFER_A_RAIL_ADDR]	= NLA_POLICY_RANGE(NLA_BINARY, 4, 16),
	[KXFER_A_RAIL_PORT]	= NLA_POLICY_MIN(NLA_U16, 1),
};

static const struct nla_policy kxfer_peer_new_policy[KXFER_A_PEER_MAX + 1] = {
	[KXFER_A_PEER_NAME]	= { .type = NLA_NUL_STRING,
				    .len = KXFER_NAME_MAX - 1 },
	[KXFER_A_PEER_ADDR]	= NLA_POLICY_RANGE(NLA_BINARY, 4, 16),
	[KXFER_A_PEER_RAILS]	= NLA_POLICY_NESTED(kxfer_rail_policy),
	[KXFER_A_PEER_PORT]	= NLA_POLICY_MIN(NLA_U16, 1),
	[KXFER_A_PEER_QPS]	= NLA_POLICY_RANGE(NLA_U32, 1, KXFER_MAX_QPS),
	[KXFER_A_PEER_DEPTH]	= NLA_POLICY_RANGE(NLA_U32, 16, 16384),
	[KXFER_A_PEER_KEY]	= { .type = NLA_NUL_STRING,
				    .len = KXFER_NAME_MAX - 1 },
	[KXFER_A_PEER_POLL]	= { .type = NLA_FLAG },
};

static const struct nla_policy kxfer_peer_name_policy[KXFER_A_PEER_MAX + 1] = {
	[KXFER_A_PEER_NAME]	= { .type = NLA_NUL_STRING,
				    .len = KXFER_NAME_MAX - 1 },
};

static const struct nla_policy kxfer_key_new_policy[KXFER_A_KEY_MAX + 1] = {
	[KXFER_A_KEY_NAME]	= { .type = NLA_NUL_STRING,
				    .len = KXFER_NAME_MAX - 1 },
	[KXFER_A_KEY_SECRET]	= NLA_POLICY_RANGE(NLA_BINARY, KXFER_KEY_MIN_LEN,
						   KXFER_KEY_MAX_LEN),
	[KXFER_A_KEY_PEER]	= { .type = NLA_NUL_STRING,
				    .len = KXFER_NAME_MAX - 1 },
};

static const struct nla_policy kxfer_key_set_policy[KXFER_A_KEY_MAX + 1] = {
	[KXFER_A_KEY_NAME]	= { .type = NLA_NUL_STRING,
				    .len = KXFER_NAME_MAX - 1 },
	[KXFER_A_KEY_SECRET]	= NLA_POLICY_RANGE(NLA_BINARY, KXFER_KEY_MIN_LEN,
						   KXFER_KEY_MAX_LEN),
};

static const struct nla_policy kxfer_key_name_policy[KXFER_A_KEY_MAX + 1] = {
	[KXFER_A_KEY_NAME]	= { .type = NLA_NUL_STRING,
				    .len = KXFER_NAME_MAX - 1 },
};

/* QPS and IDLE are checked with their reason (ondemand.c) */
static const struct nla_policy kxfer_connect_policy[KXFER_A_CONNECT_MAX + 1] = {
	[KXFER_A_CONNECT_PREFIX]	= NLA_POLICY_NESTED(kxfer_prefix_policy),
	[KXFER_A_CONNECT_PORT]		= NLA_POLICY_MIN(NLA_U16, 1),
	[KXFER_A_CONNECT_KEY]		= { .type = NLA_NUL_STRING,
					    .len = KXFER_NAME_MAX - 1 },
	[KXFER_A_CONNECT_QPS]		= { .type = NLA_U32 },
	[KXFER_A_CONNECT_IDLE]		= { .type = NLA_U32 },
};

/*
 * Names of pools, exports and peers: 1 to 31 characters out of letters,
 * digits and ". _ - :", so that they print safely in logs and tables.
 */
static const char *kxfer_nl_name(struct genl_info *info, int attr,
				 struct netlink_ext_ack *extack)
{
	const struct nlattr *nla = info->attrs[attr];
	const char *s;

	if (!nla) {
		NL_SET_ERR_ATTR_MISS(extack, NULL, attr);
		NL_SET_ERR_MSG(extack, "name is required");
		return ERR_PTR(-EINVAL);
	}
	s = nla_data(nla);
	if (!*s) {
		NL_SET_ERR_MSG_ATTR(extack, nla, "name is empty");
		return ERR_PTR(-EINVAL);
	}
	if (!kxfer_name_valid(s)) {
		NL_SET_ERR_MSG_ATTR(extack, nla,
				    "name may hold only letters, digits and . _ - :");
		return ERR_PTR(-EINVAL);
	}
	return s;
}

/* ---------------------------------------------------------------------- */
/* Devices                                                                 */
/* ---------------------------------------------------------------------- */

static enum kxfer_link_layer kxfer_link_layer(struct ib_device *ibdev, u32 port)
{
	switch (rdma_port_get_link_layer(ibdev, port)) {
	case IB_LINK_LAYER_INFINIBAND:
		return KXFER_LINK_LAYER_INFINIBAND;
	case IB_LINK_LAYER_ETHERNET:
		return KXFER_LINK_LAYER_ETHERNET;
	default:
		return KXFER_LINK_LAYER_UNSPECIFIED;
	}
}

/* The net device behind a RoCE port, read from its first GID entry. */
static int kxfer_put_port_netdev(struct sk_buff *skb, struct ib_device *ibdev,
				 u32 port)
{
	const struct ib_gid_attr *attr;
	struct net_device *ndev;
	char name[IFNAMSIZ] = "";

	attr = rdma_get_gid_attr(ibdev, port, 0);
	if (IS_ERR(attr))
		return 0;
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(attr);
	if (!IS_ERR_OR_NULL(ndev))
		strscpy(name, ndev->name, sizeof(name));
	rcu_read_unlock();
	rdma_put_gid_attr(attr);
	return name[0] ? nla_put_string(skb, KXFER_A_PORT_NETDEV, name) : 0;
}

static int kxfer_nl_fill_port(struct sk_buff *skb, struct ib_device *ibdev,
			      u32 port)
{
	struct ib_port_attr pa;
	struct nlattr *nest;

	if (ib_query_port(ibdev, port, &pa))
		memset(&pa, 0, sizeof(pa));

	nest = nla_nest_start(skb, KXFER_A_DEV_PORT);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, KXFER_A_PORT_NUM, port) ||
	    nla_put_u32(skb, KXFER_A_PORT_STATE, pa.state) ||
	    nla_put_u32(skb, KXFER_A_PORT_LINK_LAYER,
			kxfer_link_layer(ibdev, port)) ||
	    nla_put_u32(skb, KXFER_A_PORT_ACTIVE_MTU,
			pa.active_mtu ? ib_mtu_enum_to_int(pa.active_mtu) : 0) ||
	    nla_put_u32(skb, KXFER_A_PORT_GID_TBL_LEN, pa.gid_tbl_len) ||
	    kxfer_put_port_netdev(skb, ibdev, port)) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

static int kxfer_nl_fill_dev(struct sk_buff *skb, struct ib_device *ibdev,
			     bool full)
{
	const struct ib_device_attr *a = &ibdev->attrs;
	struct nlattr *ports;
	u32 port;

	if (nla_put_string(skb, KXFER_A_DEV_NAME, dev_name(&ibdev->dev)))
		return -EMSGSIZE;
	if (!full)
		return 0;
	if (nla_put_u64_64bit(skb, KXFER_A_DEV_NODE_GUID,
			      be64_to_cpu(ibdev->node_guid), KXFER_A_DEV_PAD) ||
	    nla_put_u32(skb, KXFER_A_DEV_MAX_FAST_REG_PAGE_LIST_LEN,
			a->max_fast_reg_page_list_len) ||
	    nla_put_u32(skb, KXFER_A_DEV_MAX_SEND_SGE, a->max_send_sge) ||
	    nla_put_u32(skb, KXFER_A_DEV_MAX_QP_WR, a->max_qp_wr) ||
	    nla_put_u64_64bit(skb, KXFER_A_DEV_MAX_MR_SIZE, a->max_mr_size,
			      KXFER_A_DEV_PAD))
		return -EMSGSIZE;

	ports = nla_nest_start(skb, KXFER_A_DEV_PORTS);
	if (!ports)
		return -EMSGSIZE;
	rdma_for_each_port(ibdev, port)
		if (kxfer_nl_fill_port(skb, ibdev, port))
			return -EMSGSIZE;
	nla_nest_end(skb, ports);
	return 0;
}

static int kxfer_nl_dev_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct kxfer_device *kd;
	struct sk_buff *msg;
	void *hdr;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, KXFER_A_DEV_NAME))
		return -EINVAL;
	kd = kxfer_device_get_by_name(nla_data(info->attrs[KXFER_A_DEV_NAME]));
	if (!kd) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[KXFER_A_DEV_NAME],
				    "no such RDMA device");
		return -ENODEV;
	}

	ret = -ENOMEM;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		goto out_put;
	hdr = genlmsg_put_reply(msg, info, &kxfer_genl_family, 0,
				KXFER_CMD_DEV_GET);
	ret = -EMSGSIZE;
	if (!hdr || kxfer_nl_fill_dev(msg, kd->kd_ibdev, true))
		goto out_free;
	genlmsg_end(msg, hdr);
	kxfer_device_put(kd);
	return genlmsg_reply(msg, info);

out_free:
	nlmsg_free(msg);
out_put:
	kxfer_device_put(kd);
	return ret;
}

static int kxfer_nl_dev_get_dumpit(struct sk_buff *skb,
				   struct netlink_callback *cb)
{
	struct kxfer_device *kd;
	long idx = 0;
	void *hdr;

	mutex_lock(&kxfer_dev_mutex);
	list_for_each_entry(kd, &kxfer_devices, kd_node) {
		if (idx++ < cb->args[0])
			continue;
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				  cb->nlh->nlmsg_seq, &kxfer_genl_family,
				  NLM_F_MULTI, KXFER_CMD_DEV_GET);
		if (!hdr)
			break;
		if (kxfer_nl_fill_dev(skb, kd->kd_ibdev, true)) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
		cb->args[0] = idx;
	}
	mutex_unlock(&kxfer_dev_mutex);
	return skb->len;
}

/* ---------------------------------------------------------------------- */
/* Pools                                                                   */
/* ---------------------------------------------------------------------- */

static int kxfer_nl_fill_pool(struct sk_buff *skb, struct kxfer_pool *pool,
			      struct user_namespace *ns, bool full)
{
	unsigned int counts[64 - PAGE_SHIFT] = {};
	struct kxfer_pool_map *pm;
	struct nlattr *nest, *item;
	u64 map_ns = 0;
	unsigned int i;
	int ret = -EMSGSIZE;

	lockdep_assert_held(&kxfer_obj_mutex);
	if (nla_put_string(skb, KXFER_A_POOL_NAME, pool->kp_name))
		return -EMSGSIZE;
	if (!full)
		return 0;
	if (nla_put_u64_64bit(skb, KXFER_A_POOL_SIZE, pool->kp_size,
			      KXFER_A_POOL_PAD) ||
	    nla_put_u32(skb, KXFER_A_POOL_OWNER,
			from_kuid_munged(ns, pool->kp_owner)) ||
	    nla_put_u32(skb, KXFER_A_POOL_GROUP,
			from_kgid_munged(ns, pool->kp_group)) ||
	    nla_put_u32(skb, KXFER_A_POOL_MODE, pool->kp_mode) ||
	    nla_put_s32(skb, KXFER_A_POOL_NUMA_NODE, pool->kp_numa) ||
	    nla_put_u32(skb, KXFER_A_POOL_ATTACH_COUNT, pool->kp_users) ||
	    nla_put_u32(skb, KXFER_A_POOL_EXPORT_COUNT, pool->kp_nexports) ||
	    nla_put_u64_64bit(skb, KXFER_A_POOL_ALLOC_NS, pool->kp_alloc_ns,
			      KXFER_A_POOL_PAD) ||
	    nla_put_u32(skb, KXFER_A_POOL_KIND, pool->kp_kind))
		return -EMSGSIZE;
	if (pool->kp_near_name[0] &&
	    nla_put_string(skb, KXFER_A_POOL_NEAR, pool->kp_near_name))
		return -EMSGSIZE;
	if (pool->kp_kind != KXFER_POOL_KIND_KERNEL &&
	    (nla_put_u32(skb, KXFER_A_POOL_PID, pool->kp_pid) ||
	     nla_put_string(skb, KXFER_A_POOL_COMM, pool->kp_comm)))
		return -EMSGSIZE;

	/* By size class: a kernel pool's chunks are exactly that size. */
	for (i = 0; i < pool->kp_nchunks; i++)
		counts[ilog2(pool->kp_chunks[i].kc_len) - PAGE_SHIFT]++;
	nest = nla_nest_start(skb, KXFER_A_POOL_CHUNKS);
	if (!nest)
		return -EMSGSIZE;
	for (i = ARRAY_SIZE(counts); i-- > 0;) {
		if (!counts[i])
			continue;
		item = nla_nest_start(skb, KXFER_A_POOL_CHUNK);
		if (!item ||
		    nla_put_u64_64bit(skb, KXFER_A_CHUNK_SIZE, PAGE_SIZE << (u64)i,
				      KXFER_A_CHUNK_PAD) ||
		    nla_put_u32(skb, KXFER_A_CHUNK_COUNT, counts[i]))
			return -EMSGSIZE;
		nla_nest_end(skb, item);
	}
	nla_nest_end(skb, nest);

	mutex_lock(&pool->kp_map_lock);
	nest = nla_nest_start(skb, KXFER_A_POOL_DEVICES);
	if (!nest)
		goto out_unlock;
	list_for_each_entry(pm, &pool->kp_maps, pm_node) {
		item = nla_nest_start(skb, KXFER_A_POOL_DEVICE);
		if (!item ||
		    nla_put_string(skb, KXFER_A_POOL_DEV_NAME,
				   dev_name(&pm->pm_dev->kd_ibdev->dev)) ||
		    nla_put_u64_64bit(skb, KXFER_A_POOL_DEV_MAP_NS,
				      pm->pm_map_ns, KXFER_A_POOL_DEV_PAD))
			goto out_unlock;
		nla_nest_end(skb, item);
		map_ns += pm->pm_map_ns;
	}
	nla_nest_end(skb, nest);
	if (nla_put_u64_64bit(skb, KXFER_A_POOL_MAP_NS, map_ns,
			      KXFER_A_POOL_PAD))
		goto out_unlock;
	ret = 0;
out_unlock:
	mutex_unlock(&pool->kp_map_lock);
	return ret;
}

static int kxfer_nl_pool_new_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct user_namespace *ns = current_user_ns();
	struct nlattr **tb = info->attrs;
	struct kxfer_pool_args args = {
		.owner	= GLOBAL_ROOT_UID,
		.group	= GLOBAL_ROOT_GID,
		.mode	= 0660,
		.numa	= NUMA_NO_NODE,
	};

	args.name = kxfer_nl_name(info, KXFER_A_POOL_NAME, info->extack);
	if (IS_ERR(args.name))
		return PTR_ERR(args.name);
	if (GENL_REQ_ATTR_CHECK(info, KXFER_A_POOL_SIZE))
		return -EINVAL;
	args.size = nla_get_u64(tb[KXFER_A_POOL_SIZE]);
	if (tb[KXFER_A_POOL_OWNER]) {
		args.owner = make_kuid(ns, nla_get_u32(tb[KXFER_A_POOL_OWNER]));
		if (!uid_valid(args.owner)) {
			NL_SET_ERR_MSG_ATTR(info->extack, tb[KXFER_A_POOL_OWNER],
					    "owner is not a valid uid here");
			return -EINVAL;
		}
	}
	if (tb[KXFER_A_POOL_GROUP]) {
		args.group = make_kgid(ns, nla_get_u32(tb[KXFER_A_POOL_GROUP]));
		if (!gid_valid(args.group)) {
			NL_SET_ERR_MSG_ATTR(info->extack, tb[KXFER_A_POOL_GROUP],
					    "group is not a valid gid here");
			return -EINVAL;
		}
	}
	if (tb[KXFER_A_POOL_MODE])
		args.mode = nla_get_u32(tb[KXFER_A_POOL_MODE]);
	if (tb[KXFER_A_POOL_NUMA_NODE])
		args.numa = nla_get_s32(tb[KXFER_A_POOL_NUMA_NODE]);
	if (tb[KXFER_A_POOL_NEAR])
		args.near = nla_data(tb[KXFER_A_POOL_NEAR]);

	return kxfer_pool_create(&args, info->extack);
}

static int kxfer_nl_pool_del_doit(struct sk_buff *skb, struct genl_info *info)
{
	const char *name = kxfer_nl_name(info, KXFER_A_POOL_NAME, info->extack);

	if (IS_ERR(name))
		return PTR_ERR(name);
	return kxfer_pool_delete(name, info->extack);
}

static int kxfer_nl_pool_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct kxfer_pool *pool;
	struct sk_buff *msg;
	const char *name;
	void *hdr;
	int ret;

	name = kxfer_nl_name(info, KXFER_A_POOL_NAME, info->extack);
	if (IS_ERR(name))
		return PTR_ERR(name);
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;

	mutex_lock(&kxfer_obj_mutex);
	list_for_each_entry(pool, &kxfer_pools, kp_node)
		if (!pool->kp_deleted && !strcmp(pool->kp_name, name))
			break;
	if (list_entry_is_head(pool, &kxfer_pools, kp_node)) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[KXFER_A_POOL_NAME],
				    "no such pool");
		ret = -ENOENT;
		goto out_unlock;
	}
	hdr = genlmsg_put_reply(msg, info, &kxfer_genl_family, 0,
				KXFER_CMD_POOL_GET);
	ret = -EMSGSIZE;
	if (!hdr || kxfer_nl_fill_pool(msg, pool, current_user_ns(), true))
		goto out_unlock;
	mutex_unlock(&kxfer_obj_mutex);
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);

out_unlock:
	mutex_unlock(&kxfer_obj_mutex);
	nlmsg_free(msg);
	return ret;
}

static int kxfer_nl_pool_get_dumpit(struct sk_buff *skb,
				    struct netlink_callback *cb)
{
	struct kxfer_pool *pool;
	long idx = 0;
	void *hdr;

	mutex_lock(&kxfer_obj_mutex);
	list_for_each_entry(pool, &kxfer_pools, kp_node) {
		if (pool->kp_deleted || idx++ < cb->args[0])
			continue;
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				  cb->nlh->nlmsg_seq, &kxfer_genl_family,
				  NLM_F_MULTI, KXFER_CMD_POOL_GET);
		if (!hdr)
			break;
		if (kxfer_nl_fill_pool(skb, pool, current_user_ns(), true)) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
		cb->args[0] = idx;
	}
	mutex_unlock(&kxfer_obj_mutex);
	return skb->len;
}

/* ---------------------------------------------------------------------- */
/* Exports                                                                 */
/* ---------------------------------------------------------------------- */

static int kxfer_nl_prefix(const struct nlattr *nest, struct kxfer_prefix *p,
			   struct netlink_ext_ack *extack)
{
	struct nlattr *tb[KXFER_A_PREFIX_MAX + 1];
	unsigned int alen;
	int ret;

	ret = nla_parse_nested(tb, KXFER_A_PREFIX_MAX, nest,
			       kxfer_prefix_policy, extack);
	if (ret)
		return ret;
	if (!tb[KXFER_A_PREFIX_ADDR] || !tb[KXFER_A_PREFIX_LEN]) {
		NL_SET_ERR_MSG_ATTR(extack, nest, "prefix needs an address and a length");
		return -EINVAL;
	}
	alen = nla_len(tb[KXFER_A_PREFIX_ADDR]);
	if (alen != 4 && alen != 16) {
		NL_SET_ERR_MSG_ATTR(extack, nest,
				    "prefix address must be 4 or 16 bytes");
		return -EINVAL;
	}
	ret = kxfer_prefix_set(p, nla_data(tb[KXFER_A_PREFIX_ADDR]), alen,
			       nla_get_u8(tb[KXFER_A_PREFIX_LEN]));
	if (ret)
		NL_SET_ERR_MSG_ATTR(extack, nest, "prefix length too long");
	return ret;
}

static int kxfer_nl_put_prefix(struct sk_buff *skb, int type,
			       const struct kxfer_prefix *p)
{
	struct nlattr *nest = nla_nest_start(skb, type);

	if (!nest ||
	    nla_put(skb, KXFER_A_PREFIX_ADDR,
		    p->p_family == AF_INET ? 4 : 16, p->p_addr) ||
	    nla_put_u8(skb, KXFER_A_PREFIX_LEN, p->p_len))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

static int kxfer_nl_fill_export(struct sk_buff *skb, struct kxfer_export *exp,
				bool full)
{
	lockdep_assert_held(&kxfer_obj_mutex);
	if (nla_put_string(skb, KXFER_A_EXPORT_NAME, exp->ke_name))
		return -EMSGSIZE;
	if (!full)
		return 0;
	if (nla_put_string(skb, KXFER_A_EXPORT_POOL, exp->ke_pool->kp_name) ||
	    nla_put_u64_64bit(skb, KXFER_A_EXPORT_OFFSET, exp->ke_off,
			      KXFER_A_EXPORT_PAD) ||
	    nla_put_u64_64bit(skb, KXFER_A_EXPORT_LEN, exp->ke_len,
			      KXFER_A_EXPORT_PAD) ||
	    (exp->ke_peer[0] &&
	     nla_put_string(skb, KXFER_A_EXPORT_PEER, exp->ke_peer)) ||
	    nla_put_u32(skb, KXFER_A_EXPORT_ACCESS, exp->ke_access) ||
	    nla_put_u32(skb, KXFER_A_EXPORT_AUTH, exp->ke_auth) ||
	    nla_put_u64_64bit(skb, KXFER_A_EXPORT_MR_PAGE,
			      1ULL << exp->ke_mr_shift, KXFER_A_EXPORT_PAD) ||
	    nla_put_u32(skb, KXFER_A_EXPORT_MRS,
			DIV_ROUND_UP(exp->ke_len +
				     (exp->ke_off & ((1ULL << exp->ke_mr_shift) - 1)),
				     (u64)KXFER_MR_MAX_PAGES <<
				     exp->ke_mr_shift)) ||
	    (exp->ke_file &&
	     nla_put_u32(skb, KXFER_A_EXPORT_PID, exp->ke_pid)) ||
	    (exp->ke_scoped && nla_put_flag(skb, KXFER_A_EXPORT_SCOPED)))
		return -EMSGSIZE;
	if (exp->ke_has_from &&
	    kxfer_nl_put_prefix(skb, KXFER_A_EXPORT_FROM, &exp->ke_from))
		return -EMSGSIZE;
	return 0;
}

static int kxfer_nl_export_new_doit(struct sk_buff *skb,
				    struct genl_info *info)
{
	struct netlink_ext_ack *extack = info->extack;
	struct nlattr **tb = info->attrs;
	struct kxfer_export_args args = { .peer = "" };
	const char *name, *pool, *peer = "";
	struct kxfer_prefix from;
	u64 off = 0, len = 0;
	int ret;

	name = kxfer_nl_name(info, KXFER_A_EXPORT_NAME, extack);
	if (IS_ERR(name))
		return PTR_ERR(name);
	pool = kxfer_nl_name(info, KXFER_A_EXPORT_POOL, extack);
	if (IS_ERR(pool))
		return PTR_ERR(pool);
	if (tb[KXFER_A_EXPORT_PEER]) {
		peer = kxfer_nl_name(info, KXFER_A_EXPORT_PEER, extack);
		if (IS_ERR(peer))
			return PTR_ERR(peer);
	}
	if (GENL_REQ_ATTR_CHECK(info, KXFER_A_EXPORT_ACCESS))
		return -EINVAL;
	if (tb[KXFER_A_EXPORT_OFFSET])
		off = nla_get_u64(tb[KXFER_A_EXPORT_OFFSET]);
	if (tb[KXFER_A_EXPORT_LEN])
		len = nla_get_u64(tb[KXFER_A_EXPORT_LEN]);
	if (tb[KXFER_A_EXPORT_FROM]) {
		ret = kxfer_nl_prefix(tb[KXFER_A_EXPORT_FROM], &from, extack);
		if (ret)
			return ret;
	}

	args.name = name;
	args.off = off;
	args.len = len;
	args.has_len = !!tb[KXFER_A_EXPORT_LEN];
	args.peer = peer;
	args.from = tb[KXFER_A_EXPORT_FROM] ? &from : NULL;
	args.access = nla_get_u32(tb[KXFER_A_EXPORT_ACCESS]);
	if (tb[KXFER_A_EXPORT_AUTH])
		args.auth = nla_get_u32(tb[KXFER_A_EXPORT_AUTH]);
	return kxfer_export_create(&args, pool, NULL, extack);
}

static int kxfer_nl_export_del_doit(struct sk_buff *skb,
				    struct genl_info *info)
{
	const char *name = kxfer_nl_name(info, KXFER_A_EXPORT_NAME,
					 info->extack);

	if (IS_ERR(name))
		return PTR_ERR(name);
	/*
	 * Not waiting for the peers: the generic netlink lock is held, and a
	 * peer that does not answer would hold every family for the drain's
	 * bound.  The sessions finish the withdrawal.
	 */
	return kxfer_export_delete(name, NULL, KXFER_WITHDRAW_NOWAIT,
				   info->extack);
}

static int kxfer_nl_export_get_doit(struct sk_buff *skb,
				    struct genl_info *info)
{
	struct kxfer_export *exp;
	struct sk_buff *msg;
	const char *name;
	void *hdr;
	int ret;

	name = kxfer_nl_name(info, KXFER_A_EXPORT_NAME, info->extack);
	if (IS_ERR(name))
		return PTR_ERR(name);
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;

	mutex_lock(&kxfer_obj_mutex);
	list_for_each_entry(exp, &kxfer_exports, ke_node)
		if (!strcmp(exp->ke_name, name))
			break;
	if (list_entry_is_head(exp, &kxfer_exports, ke_node)) {
		NL_SET_ERR_MSG_ATTR(info->extack,
				    info->attrs[KXFER_A_EXPORT_NAME],
				    "no such export");
		ret = -ENOENT;
		goto out_unlock;
	}
	hdr = genlmsg_put_reply(msg, info, &kxfer_genl_family, 0,
				KXFER_CMD_EXPORT_GET);
	ret = -EMSGSIZE;
	if (!hdr || kxfer_nl_fill_export(msg, exp, true))
		goto out_unlock;
	mutex_unlock(&kxfer_obj_mutex);
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);

out_unlock:
	mutex_unlock(&kxfer_obj_mutex);
	nlmsg_free(msg);
	return ret;
}

static int kxfer_nl_export_get_dumpit(struct sk_buff *skb,
				      struct netlink_callback *cb)
{
	struct kxfer_export *exp;
	long idx = 0;
	void *hdr;

	mutex_lock(&kxfer_obj_mutex);
	list_for_each_entry(exp, &kxfer_exports, ke_node) {
		if (idx++ < cb->args[0])
			continue;
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				  cb->nlh->nlmsg_seq, &kxfer_genl_family,
				  NLM_F_MULTI, KXFER_CMD_EXPORT_GET);
		if (!hdr)
			break;
		if (kxfer_nl_fill_export(skb, exp, true)) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
		cb->args[0] = idx;
	}
	mutex_unlock(&kxfer_obj_mutex);
	return skb->len;
}

/* ---------------------------------------------------------------------- */
/* Listeners                                                               */
/* ---------------------------------------------------------------------- */

/* An address attribute (4 or 16 bytes) and a port into a sockaddr. */
static int kxfer_nl_sockaddr(const struct nlattr *addr, const struct nlattr *port,
			     struct sockaddr_storage *ss,
			     struct netlink_ext_ack *extack)
{
	u16 p = port ? nla_get_u16(port) : KXFER_PORT;

	memset(ss, 0, sizeof(*ss));
	if (nla_len(addr) == 4) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(p);
		memcpy(&sin->sin_addr, nla_data(addr), 4);
	} else if (nla_len(addr) == 16) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(p);
		memcpy(&sin6->sin6_addr, nla_data(addr), 16);
	} else {
		NL_SET_ERR_MSG_ATTR(extack, addr,
				    "address must be 4 (IPv4) or 16 (IPv6) bytes");
		return -EINVAL;
	}
	return 0;
}

/* An optional key named by attribute @attr, for a listener or a peer. */
static struct kxfer_key *kxfer_nl_key(struct genl_info *info, int attr)
{
	const char *name;

	if (!info->attrs[attr])
		return NULL;
	name = kxfer_nl_name(info, attr, info->extack);
	if (IS_ERR(name))
		return ERR_CAST(name);
	return kxfer_key_get(name, info->extack);
}

static int kxfer_nl_listen_new_doit(struct sk_buff *skb,
				    struct genl_info *info)
{
	struct kxfer_prefix *allow;
	struct sockaddr_storage ss;
	unsigned int nallow = 0;
	struct kxfer_key *key;
	struct nlattr *a;
	int rem, ret;

	if (GENL_REQ_ATTR_CHECK(info, KXFER_A_LISTEN_ADDR))
		return -EINVAL;
	ret = kxfer_nl_sockaddr(info->attrs[KXFER_A_LISTEN_ADDR],
				info->attrs[KXFER_A_LISTEN_PORT], &ss,
				info->extack);
	if (ret)
		return ret;
	allow = kcalloc(KXFER_MAX_ALLOW, sizeof(*allow), GFP_KERNEL);
	if (!allow)
		return -ENOMEM;
	nlmsg_for_each_attr(a, info->nlhdr, GENL_HDRLEN, rem) {
		if (nla_type(a) != KXFER_A_LISTEN_ALLOW)
			continue;
		if (nallow == KXFER_MAX_ALLOW) {
			NL_SET_ERR_MSG_ATTR(info->extack, a,
					    "too many allowed prefixes (16 at most)");
			ret = -EINVAL;
			goto out_free;
		}
		ret = kxfer_nl_prefix(a, &allow[nallow], info->extack);
		if (ret)
			goto out_free;
		nallow++;
	}
	key = kxfer_nl_key(info, KXFER_A_LISTEN_KEY);
	if (IS_ERR(key)) {
		ret = PTR_ERR(key);
		goto out_free;
	}
	ret = kxfer_listen_create(&ss, allow, nallow, key,
				  info->attrs[KXFER_A_LISTEN_AUTH] &&
				  nla_get_u32(info->attrs[KXFER_A_LISTEN_AUTH]) ==
				  KXFER_AUTH_REQUIRED,
				  nla_get_flag(info->attrs[KXFER_A_LISTEN_POLL]),
				  info->extack);
out_free:
	kfree(allow);
	return ret;
}

static int kxfer_nl_listen_del_doit(struct sk_buff *skb,
				    struct genl_info *info)
{
	struct sockaddr_storage ss;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, KXFER_A_LISTEN_ADDR))
		return -EINVAL;
	ret = kxfer_nl_sockaddr(info->attrs[KXFER_A_LISTEN_ADDR],
				info->attrs[KXFER_A_LISTEN_PORT], &ss,
				info->extack);
	return ret ?: kxfer_listen_delete(&ss, info->extack);
}

static int kxfer_nl_put_sockaddr(struct sk_buff *skb, int addr_type,
				 int port_type,
				 const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)ss;

		return nla_put(skb, addr_type, 4, &sin->sin_addr) ||
		       nla_put_u16(skb, port_type, ntohs(sin->sin_port));
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)ss;

		return nla_put(skb, addr_type, 16, &sin6->sin6_addr) ||
		       nla_put_u16(skb, port_type, ntohs(sin6->sin6_port));
	}
	return 0;
}

static int kxfer_nl_fill_listen(struct sk_buff *skb, struct kxfer_listener *l)
{
	unsigned int i;

	if (kxfer_nl_put_sockaddr(skb, KXFER_A_LISTEN_ADDR,
				  KXFER_A_LISTEN_PORT, &l->l_addr) ||
	    nla_put_u32(skb, KXFER_A_LISTEN_STATE, l->l_state) ||
	    nla_put_u32(skb, KXFER_A_LISTEN_ACCEPTED,
			atomic_read(&l->l_accepted)) ||
	    nla_put_u32(skb, KXFER_A_LISTEN_REJECTED,
			atomic_read(&l->l_rejected)) ||
	    (l->l_key &&
	     nla_put_string(skb, KXFER_A_LISTEN_KEY, l->l_key->k_name)) ||
	    nla_put_u32(skb, KXFER_A_LISTEN_AUTH, l->l_auth_required ?
			KXFER_AUTH_REQUIRED : KXFER_AUTH_OPTIONAL) ||
	    nla_put_u32(skb, KXFER_A_LISTEN_AUTH_OK,
			atomic_read(&l->l_counts->ac_ok)) ||
	    nla_put_u32(skb, KXFER_A_LISTEN_AUTH_FAILED,
			atomic_read(&l->l_counts->ac_failed)) ||
	    nla_put_u32(skb, KXFER_A_LISTEN_EVICTED,
			atomic_read(&l->l_evicted)) ||
	    (l->l_poll && nla_put_flag(skb, KXFER_A_LISTEN_POLL)))
		return -EMSGSIZE;
	for (i = 0; i < l->l_nallow; i++)
		if (kxfer_nl_put_prefix(skb, KXFER_A_LISTEN_ALLOW, &l->l_allow[i]))
			return -EMSGSIZE;
	return 0;
}

static int kxfer_nl_listen_get_dumpit(struct sk_buff *skb,
				      struct netlink_callback *cb)
{
	struct kxfer_listener *l;
	long idx = 0;
	void *hdr;

	mutex_lock(&kxfer_listen_mutex);
	list_for_each_entry(l, &kxfer_listeners, l_node) {
		if (idx++ < cb->args[0])
			continue;
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				  cb->nlh->nlmsg_seq, &kxfer_genl_family,
				  NLM_F_MULTI, KXFER_CMD_LISTEN_GET);
		if (!hdr)
			break;
		if (kxfer_nl_fill_listen(skb, l)) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
		cb->args[0] = idx;
	}
	mutex_unlock(&kxfer_listen_mutex);
	return skb->len;
}

/* ---------------------------------------------------------------------- */
/* Peers                                                                   */
/* ---------------------------------------------------------------------- */

/* Whether a session is authenticated, and with which key; never bytes. */
static int kxfer_nl_put_peer_auth(struct sk_buff *skb, struct kxfer_session *s)
{
	const struct kxfer_sess_auth *a = &s->s_auth;
	const char *key = NULL;

	if (a->sa_key)
		key = a->sa_key->k_name;
	else if (a->sa_result == KXFER_PEER_AUTH_OK ||
		 a->sa_result == KXFER_PEER_AUTH_SHARED)
		key = a->sa_used;
	if ((key && nla_put_string(skb, KXFER_A_PEER_KEY, key)) ||
	    nla_put_u32(skb, KXFER_A_PEER_AUTH, a->sa_result))
		return -EMSGSIZE;
	if (s->s_role == KXFER_PEER_CONNECTOR &&
	    nla_put_u32(skb, KXFER_A_PEER_AUTH_FAILURES, a->sa_failures))
		return -EMSGSIZE;
	return 0;
}

/*
 * A connector's attempts since it was last up and, while it waits to
 * retry, the time left until the next attempt: negative if the attempt
 * is overdue, which would mean its timer was lost.
 */
static int kxfer_nl_put_retry(struct sk_buff *skb, struct kxfer_session *s)
{
	if (s->s_role != KXFER_PEER_CONNECTOR)
		return 0;
	if (nla_put_u32(skb, KXFER_A_PEER_ATTEMPTS, s->s_attempts))
		return -EMSGSIZE;
	if (s->s_state != KXFER_PEER_DOWN || !s->s_next_try_ns)
		return 0;
	return nla_put_s64(skb, KXFER_A_PEER_NEXT_TRY_NS,
			   (s64)(s->s_next_try_ns - ktime_get_ns()),
			   KXFER_A_PEER_PAD);
}

/*
 * How much of a session kxfer_nl_fill_peer() puts: its state alone (a
 * monitor event), all of it, or all but the export lists, with
 * KXFER_A_PEER_EXPORTS_OMITTED, when they do not fit one message.
 */
enum kxfer_nl_peer_fill {
	KXFER_NL_PEER_STATE,
	KXFER_NL_PEER_FULL,
	KXFER_NL_PEER_BRIEF,
};

/* The session's QPs that exist, each a nest with its numbers and state. */
static int kxfer_nl_put_peer_qps(struct sk_buff *skb, struct kxfer_session *s)
{
	struct nlattr *nest;
	unsigned int i;

	for (i = 0; i < s->s_nqps; i++) {
		struct kxfer_qp *qp = &s->s_qps[i];
		struct ib_qp_init_attr init;
		struct ib_qp_attr attr = {};

		if (!qp->q_id || !qp->q_id->qp)
			continue;
		if (ib_query_qp(qp->q_id->qp, &attr, IB_QP_STATE, &init))
			attr.qp_state = IB_QPS_ERR;
		nest = nla_nest_start(skb, KXFER_A_PEER_QP);
		if (!nest ||
		    nla_put_u32(skb, KXFER_A_QP_INDEX, i) ||
		    nla_put_u32(skb, KXFER_A_QP_NUM, qp->q_id->qp->qp_num) ||
		    nla_put_u32(skb, KXFER_A_QP_REMOTE_NUM, qp->q_remote_qpn) ||
		    nla_put_u32(skb, KXFER_A_QP_STATE, attr.qp_state))
			return -EMSGSIZE;
		nla_nest_end(skb, nest);
	}
	return 0;
}

/*
 * The exports of a session: the peer's that arrived whole, then ours that
 * are not draining, each a nest.
 */
static int kxfer_nl_put_peer_exports(struct sk_buff *skb,
				     struct kxfer_session *s)
{
	struct kxfer_reg *rg;
	struct kxfer_rexport *rx;
	struct nlattr *nest;

	list_for_each_entry(rx, &s->s_rexports, rx_node) {
		/* not complete yet, or capability-scoped */
		if (rx->rx_have != rx->rx_nmrs || rx->rx_scoped)
			continue;
		nest = nla_nest_start(skb, KXFER_A_PEER_REMOTE_EXPORT);
		if (!nest ||
		    nla_put_string(skb, KXFER_A_REXP_NAME, rx->rx_name) ||
		    nla_put_u64_64bit(skb, KXFER_A_REXP_LEN, rx->rx_len,
				      KXFER_A_REXP_PAD) ||
		    nla_put_u32(skb, KXFER_A_REXP_ACCESS, rx->rx_access) ||
		    nla_put_u64_64bit(skb, KXFER_A_REXP_GEN, rx->rx_gen,
				      KXFER_A_REXP_PAD) ||
		    nla_put_u32(skb, KXFER_A_REXP_MRS, rx->rx_nmrs))
			return -EMSGSIZE;
		nla_nest_end(skb, nest);
	}
	list_for_each_entry(rg, &s->s_regs, rg_node) {
		if (rg->rg_draining)
			continue;
		nest = nla_nest_start(skb, KXFER_A_PEER_LOCAL_EXPORT);
		if (!nest ||
		    nla_put_string(skb, KXFER_A_REXP_NAME, rg->rg_name) ||
		    nla_put_u64_64bit(skb, KXFER_A_REXP_GEN, rg->rg_gen,
				      KXFER_A_REXP_PAD) ||
		    nla_put_u32(skb, KXFER_A_REXP_MRS, rg->rg_nmrs) ||
		    nla_put_u64_64bit(skb, KXFER_A_REXP_MR_PAGE,
				      1ULL << rg->rg_shift, KXFER_A_REXP_PAD))
			return -EMSGSIZE;
		nla_nest_end(skb, nest);
	}
	return 0;
}

/*
 * One rail of a connecting peer.  With @locked (its s_mutex held), all
 * of it; without, what may be read while it changes: no device, no
 * error string.
 */
static int kxfer_nl_put_rail(struct sk_buff *skb, struct kxfer_session *r,
			     bool locked)
{
	const struct kxfer_sess_stats *st = &r->s_stats;
	struct nlattr *nest;

	nest = nla_nest_start(skb, KXFER_A_PEER_RAILS);
	if (!nest ||
	    nla_put_u32(skb, KXFER_A_RAIL_INDEX, r->s_rail) ||
	    kxfer_nl_put_sockaddr(skb, KXFER_A_RAIL_ADDR, KXFER_A_RAIL_PORT,
				  &r->s_dst) ||
	    nla_put_u32(skb, KXFER_A_RAIL_STATE, READ_ONCE(r->s_state)) ||
	    (locked && r->s_dev &&
	     nla_put_string(skb, KXFER_A_RAIL_DEV,
			    dev_name(&r->s_dev->kd_ibdev->dev))) ||
	    (locked && r->s_last_error[0] &&
	     nla_put_string(skb, KXFER_A_RAIL_LAST_ERROR, r->s_last_error)) ||
	    nla_put_u32(skb, KXFER_A_RAIL_RECONNECTS,
			READ_ONCE(r->s_reconnects)) ||
	    nla_put_u64_64bit(skb, KXFER_A_RAIL_JOBS, atomic64_read(&st->jobs),
			      KXFER_A_RAIL_PAD) ||
	    nla_put_u64_64bit(skb, KXFER_A_RAIL_BYTES,
			      atomic64_read(&st->bytes), KXFER_A_RAIL_PAD) ||
	    nla_put_u64_64bit(skb, KXFER_A_RAIL_OK, atomic64_read(&st->ok),
			      KXFER_A_RAIL_PAD) ||
	    nla_put_u64_64bit(skb, KXFER_A_RAIL_FAILOVERS,
			      atomic64_read(&r->s_failovers), KXFER_A_RAIL_PAD) ||
	    nla_put_u64_64bit(skb, KXFER_A_RAIL_TAKEN,
			      atomic64_read(&r->s_taken), KXFER_A_RAIL_PAD) ||
	    nla_put_u64_64bit(skb, KXFER_A_RAIL_FENCED,
			      atomic64_read(&r->s_fenced), KXFER_A_RAIL_PAD) ||
	    nla_put_u64_64bit(skb, KXFER_A_RAIL_SHARES,
			      atomic64_read(&r->s_shares), KXFER_A_RAIL_PAD) ||
	    (READ_ONCE(r->s_join) && READ_ONCE(r->s_ctrl_up) &&
	     nla_put_flag(skb, KXFER_A_RAIL_JOINED))) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

/* The first rail of a connecting peer over rails: it shows the rest. */
static bool kxfer_nl_rails_first(const struct kxfer_session *s)
{
	return s->s_rails && s->s_role == KXFER_PEER_CONNECTOR && !s->s_rail;
}

/*
 * Another rail's s_mutex, while the first rail's is held: tried for
 * KXFER_NL_RAIL_WAIT_MS, not waited for.  A rail whose teardown is slow
 * (a device waiting for its work requests' buffers: rxe's QP destroy
 * waits up to 50 s for packets a downed netdev holds) must not hold up
 * the first rail's own work, keepalives included, behind a peer show.
 */
#define KXFER_NL_RAIL_WAIT_MS	200

static bool kxfer_nl_rail_trylock(struct kxfer_session *r)
{
	unsigned long end = jiffies + msecs_to_jiffies(KXFER_NL_RAIL_WAIT_MS);

	for (;;) {
		if (mutex_trylock(&r->s_mutex))
			return true;
		if (time_after(jiffies, end))
			return false;
		usleep_range(500, 1000);
	}
}

/*
 * The rails of a connecting peer, in its first rail's peer show.  Caller
 * holds the first rail's s_mutex (and kxfer_sess_mutex); the others'
 * are tried in turn (kxfer_nl_rail_trylock()); a rail busy for longer
 * is shown without its device and error.
 */
static int kxfer_nl_put_rails(struct sk_buff *skb, struct kxfer_session *s)
{
	struct kxfer_session *rails[KXFER_RAIL_SLOTS];
	unsigned int i, n;
	bool locked;
	int ret = 0;

	if (!kxfer_nl_rails_first(s))
		return 0;
	n = kxfer_rails_snapshot(s, rails);
	for (i = 0; i < n; i++) {
		if (!ret && rails[i] == s) {
			ret = kxfer_nl_put_rail(skb, s, true);
		} else if (!ret) {
			locked = kxfer_nl_rail_trylock(rails[i]);
			ret = kxfer_nl_put_rail(skb, rails[i], locked);
			if (locked)
				mutex_unlock(&rails[i]->s_mutex);
		}
		kxfer_session_put(rails[i]);
	}
	return ret;
}

static int kxfer_nl_fill_peer(struct sk_buff *skb, struct kxfer_session *s,
			      enum kxfer_nl_peer_fill how)
{
	struct kxfer_rexport *rx;
	unsigned int scoped = 0;

	if (nla_put_string(skb, KXFER_A_PEER_NAME, s->s_name) ||
	    nla_put_u32(skb, KXFER_A_PEER_ID, s->s_id) ||
	    nla_put_u32(skb, KXFER_A_PEER_STATE, s->s_state) ||
	    nla_put_u32(skb, KXFER_A_PEER_ROLE, s->s_role) ||
	    (s->s_last_error[0] &&
	     (nla_put_string(skb, KXFER_A_PEER_LAST_ERROR, s->s_last_error) ||
	      nla_put_s32(skb, KXFER_A_PEER_LAST_ERRNO, s->s_last_errno))) ||
	    kxfer_nl_put_retry(skb, s) ||
	    (s->s_rails && nla_put_u32(skb, KXFER_A_PEER_RAIL, s->s_rail)))
		return -EMSGSIZE;
	if (how == KXFER_NL_PEER_STATE)
		return 0;
	if (s->s_rails &&
	    (nla_put_u64_64bit(skb, KXFER_A_PEER_FAILOVERS,
			       atomic64_read(&s->s_failovers), KXFER_A_PEER_PAD) ||
	     nla_put_u64_64bit(skb, KXFER_A_PEER_TAKEN,
			       atomic64_read(&s->s_taken), KXFER_A_PEER_PAD) ||
	     (kxfer_nl_rails_first(s) &&
	      nla_put_u64_64bit(skb, KXFER_A_PEER_STRIPED,
				atomic64_read(&s->s_rails->r_striped),
				KXFER_A_PEER_PAD)) ||
	     kxfer_nl_put_rails(skb, s)))
		return -EMSGSIZE;
	if (kxfer_nl_put_sockaddr(skb, KXFER_A_PEER_ADDR, KXFER_A_PEER_PORT,
				  &s->s_dst) ||
	    nla_put_u32(skb, KXFER_A_PEER_QPS, s->s_nqps) ||
	    nla_put_u32(skb, KXFER_A_PEER_DEPTH, s->s_depth) ||
	    (s->s_poll && nla_put_flag(skb, KXFER_A_PEER_POLL)) ||
	    nla_put_u32(skb, KXFER_A_PEER_RECONNECTS, s->s_reconnects) ||
	    nla_put_u64_64bit(skb, KXFER_A_PEER_KEEPALIVE_RTT_NS,
			      s->s_ka_rtt_ns, KXFER_A_PEER_PAD) ||
	    nla_put_u64_64bit(skb, KXFER_A_PEER_KEEPALIVE_RTT_MAX_NS,
			      s->s_ka_rtt_max_ns, KXFER_A_PEER_PAD) ||
	    nla_put_u32(skb, KXFER_A_PEER_EXPORTS_WITHHELD,
			s->s_exports_withheld) ||
	    nla_put_u32(skb, KXFER_A_PEER_KEEPALIVE_TIMEOUT_MS,
			div_u64(kxfer_session_ka_timeout_ns(s),
				NSEC_PER_MSEC)) ||
	    nla_put_u32(skb, KXFER_A_PEER_HANDLES,
			atomic_read(&s->s_handles)) ||
	    nla_put_u32(skb, KXFER_A_PEER_DRAINING, s->s_drains) ||
	    (s->s_ondemand &&
	     (nla_put_flag(skb, KXFER_A_PEER_ON_DEMAND) ||
	      nla_put_u32(skb, KXFER_A_PEER_IDLE_TIMEOUT, s->s_idle_s) ||
	      nla_put_u32(skb, KXFER_A_PEER_IDLE_MS,
			  div_u64(kxfer_session_idle_ns(s), NSEC_PER_MSEC)))) ||
	    nla_put_u64_64bit(skb, KXFER_A_PEER_UP_NS, s->s_up_ns,
			      KXFER_A_PEER_PAD) ||
	    (s->s_remote_node[0] &&
	     nla_put_string(skb, KXFER_A_PEER_REMOTE_NODE, s->s_remote_node)) ||
	    kxfer_nl_put_peer_auth(skb, s))
		return -EMSGSIZE;
	if (s->s_dev &&
	    (nla_put_string(skb, KXFER_A_PEER_DEV,
			    dev_name(&s->s_dev->kd_ibdev->dev)) ||
	     nla_put_u32(skb, KXFER_A_PEER_PORT_NUM, s->s_port_num)))
		return -EMSGSIZE;

	if (kxfer_nl_put_peer_qps(skb, s))
		return -EMSGSIZE;
	/* Their names are for those their owner gave the token to. */
	list_for_each_entry(rx, &s->s_rexports, rx_node)
		if (rx->rx_scoped && rx->rx_have == rx->rx_nmrs)
			scoped++;
	if (nla_put_u32(skb, KXFER_A_PEER_REMOTE_SCOPED, scoped))
		return -EMSGSIZE;
	if (how == KXFER_NL_PEER_BRIEF)
		return nla_put_flag(skb, KXFER_A_PEER_EXPORTS_OMITTED) ?
		       -EMSGSIZE : 0;
	return kxfer_nl_put_peer_exports(skb, s);
}

/*
 * peer add with rails: KXFER_A_PEER_ADDR is the first, each
 * KXFER_A_PEER_RAILS one more; each rail proves the peer's key when it
 * connects first, so each holds a reference to it.
 */
static int kxfer_nl_peer_new_rails(struct genl_info *info, const char *name,
				   const struct sockaddr_storage *first)
{
	struct sockaddr_storage dsts[KXFER_MAX_RAILS];
	struct kxfer_key *keys[KXFER_MAX_RAILS] = {};
	struct nlattr **tb = info->attrs;
	struct nlattr *rt[KXFER_A_RAIL_MAX + 1];
	struct netlink_ext_ack *extack = info->extack;
	unsigned int n = 1, i;
	struct nlattr *nla;
	int rem, ret;

	dsts[0] = *first;
	nla_for_each_attr(nla, genlmsg_data(info->genlhdr),
			  genlmsg_len(info->genlhdr), rem) {
		if (nla_type(nla) != KXFER_A_PEER_RAILS)
			continue;
		if (n == KXFER_MAX_RAILS) {
			NL_SET_ERR_MSG_ATTR(extack, nla, "a peer has 1 to 8 rails");
			return -EINVAL;
		}
		ret = nla_parse_nested(rt, KXFER_A_RAIL_MAX, nla,
				       kxfer_rail_policy, extack);
		if (ret)
			return ret;
		if (!rt[KXFER_A_RAIL_ADDR]) {
			NL_SET_ERR_MSG_ATTR(extack, nla, "a rail needs an address");
			return -EINVAL;
		}
		ret = kxfer_nl_sockaddr(rt[KXFER_A_RAIL_ADDR],
					rt[KXFER_A_RAIL_PORT] ?:
					tb[KXFER_A_PEER_PORT], &dsts[n], extack);
		if (ret)
			return ret;
		for (i = 0; i < n; i++)
			if (!memcmp(&dsts[i], &dsts[n], sizeof(dsts[n]))) {
				NL_SET_ERR_MSG_ATTR(extack, nla,
						    "two rails to one address");
				return -EINVAL;
			}
		n++;
	}
	for (i = 0; tb[KXFER_A_PEER_KEY] && i < n; i++) {
		keys[i] = kxfer_nl_key(info, KXFER_A_PEER_KEY);
		if (IS_ERR(keys[i])) {
			ret = PTR_ERR(keys[i]);
			while (i--)
				kxfer_key_put(keys[i]);
			return ret;
		}
	}
	return kxfer_peer_create_rails(name, dsts, n,
				       tb[KXFER_A_PEER_QPS] ?
				       nla_get_u32(tb[KXFER_A_PEER_QPS]) : 1,
				       tb[KXFER_A_PEER_DEPTH] ?
				       nla_get_u32(tb[KXFER_A_PEER_DEPTH]) : 0,
				       tb[KXFER_A_PEER_KEY] ? keys : NULL,
				       nla_get_flag(tb[KXFER_A_PEER_POLL]),
				       extack);
}

static int kxfer_nl_peer_new_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **tb = info->attrs;
	struct sockaddr_storage ss;
	struct kxfer_key *key;
	const char *name;
	int ret;

	name = kxfer_nl_name(info, KXFER_A_PEER_NAME, info->extack);
	if (IS_ERR(name))
		return PTR_ERR(name);
	if (GENL_REQ_ATTR_CHECK(info, KXFER_A_PEER_ADDR))
		return -EINVAL;
	ret = kxfer_nl_sockaddr(tb[KXFER_A_PEER_ADDR], tb[KXFER_A_PEER_PORT],
				&ss, info->extack);
	if (ret)
		return ret;
	if (tb[KXFER_A_PEER_RAILS])
		return kxfer_nl_peer_new_rails(info, name, &ss);
	key = kxfer_nl_key(info, KXFER_A_PEER_KEY);
	if (IS_ERR(key))
		return PTR_ERR(key);
	return kxfer_peer_create(name, &ss,
				 tb[KXFER_A_PEER_QPS] ?
				 nla_get_u32(tb[KXFER_A_PEER_QPS]) : 1,
				 tb[KXFER_A_PEER_DEPTH] ?
				 nla_get_u32(tb[KXFER_A_PEER_DEPTH]) : 0,
				 key, nla_get_flag(tb[KXFER_A_PEER_POLL]),
				 info->extack);
}

static int kxfer_nl_peer_del_doit(struct sk_buff *skb, struct genl_info *info)
{
	const char *name = kxfer_nl_name(info, KXFER_A_PEER_NAME,
					 info->extack);

	if (IS_ERR(name))
		return PTR_ERR(name);
	return kxfer_peer_delete(name, info->extack);
}

/*
 * Bytes of a peer's message with its export lists: a nest of the most a
 * remote or local export puts (a name of KXFER_NAME_MAX, two u64s and
 * their pads, two u32s) per export, a QP's per QP, and a page for the
 * rest.  Caller holds s_mutex.
 */
#define KXFER_NL_PEER_EXPORT_SIZE \
	(nla_total_size(0) + nla_total_size(KXFER_NAME_MAX) + \
	 2 * nla_total_size_64bit(sizeof(u64)) + 2 * nla_total_size(sizeof(u32)))
#define KXFER_NL_PEER_QP_SIZE	(nla_total_size(0) + 4 * nla_total_size(sizeof(u32)))
/* A rail's nest: an address, a device and an error string, counters */
#define KXFER_NL_PEER_RAIL_SIZE	(nla_total_size(0) + nla_total_size(16) + \
				 2 * nla_total_size(64) + \
				 5 * nla_total_size(sizeof(u32)) + \
				 7 * nla_total_size_64bit(sizeof(u64)))
/* A reply larger than this leaves the export lists out (64 KiB). */
#define KXFER_NL_PEER_MAX	(64 * 1024)

static size_t kxfer_nl_peer_size(struct kxfer_session *s)
{
	size_t n = 0;
	struct kxfer_rexport *rx;
	struct kxfer_reg *rg;

	list_for_each_entry(rx, &s->s_rexports, rx_node)
		n++;
	list_for_each_entry(rg, &s->s_regs, rg_node)
		n++;
	return NLMSG_GOODSIZE + s->s_nqps * KXFER_NL_PEER_QP_SIZE +
	       (s->s_rails ? KXFER_RAIL_SLOTS * KXFER_NL_PEER_RAIL_SIZE : 0) +
	       n * KXFER_NL_PEER_EXPORT_SIZE;
}

static int kxfer_nl_fill_peer_full(struct sk_buff *skb,
				   struct kxfer_session *s)
{
	return kxfer_nl_fill_peer(skb, s, KXFER_NL_PEER_FULL);
}

static int kxfer_nl_fill_peer_brief(struct sk_buff *skb,
				    struct kxfer_session *s)
{
	return kxfer_nl_fill_peer(skb, s, KXFER_NL_PEER_BRIEF);
}

static int kxfer_nl_put_u64s(struct sk_buff *skb, const int *types,
			     const u64 *vals, unsigned int n, int pad)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (nla_put_u64_64bit(skb, types[i], vals[i], pad))
			return -EMSGSIZE;
	return 0;
}

/* KXFER_CMD_STATS_GET: the counters of a session and of each QP. */
static int kxfer_nl_fill_stats(struct sk_buff *skb, struct kxfer_session *s)
{
	static const int stypes[] = {
		KXFER_A_STATS_JOBS, KXFER_A_STATS_BYTES, KXFER_A_STATS_SEGS,
		KXFER_A_STATS_WRS, KXFER_A_STATS_OK,
		KXFER_A_STATS_NOTIFY_SENT, KXFER_A_STATS_NOTIFY_RECV,
		KXFER_A_STATS_ERR_FLUSH, KXFER_A_STATS_ERR_ACCESS,
		KXFER_A_STATS_ERR_TIMEOUT, KXFER_A_STATS_ERR_REMOTE,
		KXFER_A_STATS_ERR_STALE, KXFER_A_STATS_ERR_OTHER,
		KXFER_A_STATS_NOTIFY_IMM, KXFER_A_STATS_POLLED,
		KXFER_A_STATS_POLLED_WORK,
	};
	static const int qtypes[] = {
		KXFER_A_QP_PARTS, KXFER_A_QP_BYTES, KXFER_A_QP_WRS,
		KXFER_A_QP_DOORBELLS, KXFER_A_QP_SIGNALED, KXFER_A_QP_HANDOFFS,
	};
	const struct kxfer_sess_stats *st = &s->s_stats;
	const u64 svals[] = {
		atomic64_read(&st->jobs), atomic64_read(&st->bytes),
		atomic64_read(&st->segs), atomic64_read(&st->wrs),
		atomic64_read(&st->ok), atomic64_read(&st->notify_sent),
		atomic64_read(&st->notify_recv),
		atomic64_read(&st->err_flush), atomic64_read(&st->err_access),
		atomic64_read(&st->err_timeout), atomic64_read(&st->err_remote),
		atomic64_read(&st->err_stale), atomic64_read(&st->err_other),
		atomic64_read(&st->notify_imm), atomic64_read(&st->polled),
		atomic64_read(&st->polled_work),
	};
	u64 lat[2][KXFER_LAT_BUCKETS];
	struct nlattr *nest;
	unsigned int i;

	BUILD_BUG_ON(ARRAY_SIZE(stypes) != ARRAY_SIZE(svals));
	for (i = 0; i < KXFER_LAT_BUCKETS; i++) {
		lat[0][i] = atomic64_read(&st->lat_queue[i]);
		lat[1][i] = atomic64_read(&st->lat_done[i]);
	}
	if (nla_put_string(skb, KXFER_A_PEER_NAME, s->s_name) ||
	    nla_put_u32(skb, KXFER_A_PEER_ID, s->s_id))
		return -EMSGSIZE;
	nest = nla_nest_start(skb, KXFER_A_PEER_STATS);
	if (!nest || kxfer_nl_put_u64s(skb, stypes, svals, ARRAY_SIZE(svals),
				       KXFER_A_STATS_PAD) ||
	    nla_put(skb, KXFER_A_STATS_LAT_QUEUE, sizeof(lat[0]), lat[0]) ||
	    nla_put(skb, KXFER_A_STATS_LAT_DONE, sizeof(lat[1]), lat[1]))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);

	for (i = 0; i < s->s_nqps; i++) {
		struct kxfer_qp *qp = &s->s_qps[i];
		unsigned long flags;
		u64 qvals[ARRAY_SIZE(qtypes)];

		spin_lock_irqsave(&qp->q_post_lock, flags);
		qvals[0] = qp->q_parts;
		qvals[1] = qp->q_bytes;
		qvals[2] = qp->q_wrs;
		qvals[3] = qp->q_doorbells;
		qvals[4] = qp->q_signaled;
		qvals[5] = qp->q_handoffs;
		spin_unlock_irqrestore(&qp->q_post_lock, flags);
		nest = nla_nest_start(skb, KXFER_A_PEER_QP);
		if (!nest || nla_put_u32(skb, KXFER_A_QP_INDEX, i) ||
		    kxfer_nl_put_u64s(skb, qtypes, qvals, ARRAY_SIZE(qvals),
				      KXFER_A_QP_PAD))
			return -EMSGSIZE;
		nla_nest_end(skb, nest);
	}
	return 0;
}

typedef int (*kxfer_nl_sess_fill_t)(struct sk_buff *skb,
				    struct kxfer_session *s);

/* A connecting peer's rail after the first: shown within the first's. */
static bool kxfer_nl_other_rail(const struct kxfer_session *s)
{
	return s->s_rails && s->s_role == KXFER_PEER_CONNECTOR && s->s_rail;
}

/*
 * What a session command puts: @fill; where that can outgrow a message,
 * @size says how large to make the reply, and @brief is put instead when
 * @fill does not fit (a reply of KXFER_NL_PEER_MAX, or a dump's message).
 */
struct kxfer_nl_sess_ops {
	kxfer_nl_sess_fill_t	fill;
	kxfer_nl_sess_fill_t	brief;
	size_t			(*size)(struct kxfer_session *s);
};

/* One reply for @s, its message in @msg.  Caller holds s_mutex. */
static int kxfer_nl_sess_reply(struct genl_info *info, u8 cmd,
			       const struct kxfer_nl_sess_ops *ops,
			       struct kxfer_session *s, struct sk_buff **msg)
{
	size_t size = ops->size ? ops->size(s) : NLMSG_GOODSIZE;
	kxfer_nl_sess_fill_t fill = ops->fill;
	gfp_t gfp = GFP_KERNEL;
	void *hdr;

	/* What cannot fit is not tried: the brief view at once. */
	if (size > KXFER_NL_PEER_MAX && ops->brief) {
		fill = ops->brief;
		size = NLMSG_GOODSIZE;
	}
	/*
	 * Past a page the buffer is a high-order allocation: one that
	 * fails (a fragmented node) gives the brief view, not ENOMEM.
	 */
	if (size > NLMSG_GOODSIZE && ops->brief)
		gfp |= __GFP_NOWARN | __GFP_RETRY_MAYFAIL;
	for (;;) {
		*msg = genlmsg_new(min_t(size_t, size, KXFER_NL_PEER_MAX), gfp);
		if (!*msg && fill != ops->brief && ops->brief) {
			fill = ops->brief;
			size = NLMSG_GOODSIZE;
			gfp = GFP_KERNEL;
			continue;
		}
		if (!*msg)
			return -ENOMEM;
		hdr = genlmsg_put_reply(*msg, info, &kxfer_genl_family, 0, cmd);
		if (hdr && !fill(*msg, s)) {
			genlmsg_end(*msg, hdr);
			return 0;
		}
		nlmsg_free(*msg);
		*msg = NULL;
		if (!ops->brief || fill == ops->brief)
			return -EMSGSIZE;
		fill = ops->brief;
		size = NLMSG_GOODSIZE;
		gfp = GFP_KERNEL;
	}
}

static int kxfer_nl_sess_doit(struct genl_info *info, u8 cmd,
			      const struct kxfer_nl_sess_ops *ops)
{
	struct sk_buff *msg = NULL;
	struct kxfer_session *s;
	const char *name;
	int ret = -ENOENT;

	name = kxfer_nl_name(info, KXFER_A_PEER_NAME, info->extack);
	if (IS_ERR(name))
		return PTR_ERR(name);

	mutex_lock(&kxfer_sess_mutex);
	list_for_each_entry(s, &kxfer_sessions, s_node) {
		if (strcmp(s->s_name, name) || kxfer_nl_other_rail(s))
			continue;
		mutex_lock(&s->s_mutex);
		ret = kxfer_nl_sess_reply(info, cmd, ops, s, &msg);
		mutex_unlock(&s->s_mutex);
		break;
	}
	mutex_unlock(&kxfer_sess_mutex);
	if (ret) {
		if (ret == -ENOENT)
			NL_SET_ERR_MSG_ATTR(info->extack,
					    info->attrs[KXFER_A_PEER_NAME],
					    "no such peer");
		return ret;
	}
	return genlmsg_reply(msg, info);
}

static const struct kxfer_nl_sess_ops kxfer_nl_peer_ops = {
	.fill	= kxfer_nl_fill_peer_full,
	.brief	= kxfer_nl_fill_peer_brief,
	.size	= kxfer_nl_peer_size,
};

static const struct kxfer_nl_sess_ops kxfer_nl_stats_ops = {
	.fill	= kxfer_nl_fill_stats,
};

static int kxfer_nl_peer_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	return kxfer_nl_sess_doit(info, KXFER_CMD_PEER_GET, &kxfer_nl_peer_ops);
}

static int kxfer_nl_stats_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	return kxfer_nl_sess_doit(info, KXFER_CMD_STATS_GET,
				  &kxfer_nl_stats_ops);
}

/*
 * A session whose message does not fit an empty dump message is put
 * @brief, so that a dump never ends early without a word.
 */
static int kxfer_nl_sess_dumpit(struct sk_buff *skb,
				struct netlink_callback *cb, u8 cmd,
				const struct kxfer_nl_sess_ops *ops)
{
	struct kxfer_session *s;
	long idx = 0;
	void *hdr;
	int ret;

	mutex_lock(&kxfer_sess_mutex);
	list_for_each_entry(s, &kxfer_sessions, s_node) {
		bool first = !skb->len;

		if (kxfer_nl_other_rail(s) || idx++ < cb->args[0])
			continue;
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				  cb->nlh->nlmsg_seq, &kxfer_genl_family,
				  NLM_F_MULTI, cmd);
		if (!hdr)
			break;
		mutex_lock(&s->s_mutex);
		ret = ops->fill(skb, s);
		if (ret && first && ops->brief) {
			genlmsg_cancel(skb, hdr);
			hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
					  cb->nlh->nlmsg_seq,
					  &kxfer_genl_family, NLM_F_MULTI,
					  cmd);
			ret = hdr ? ops->brief(skb, s) : -EMSGSIZE;
		}
		mutex_unlock(&s->s_mutex);
		if (ret) {
			if (hdr)
				genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
		cb->args[0] = idx;
	}
	mutex_unlock(&kxfer_sess_mutex);
	return skb->len;
}

static int kxfer_nl_peer_get_dumpit(struct sk_buff *skb,
				    struct netlink_callback *cb)
{
	return kxfer_nl_sess_dumpit(skb, cb, KXFER_CMD_PEER_GET,
				    &kxfer_nl_peer_ops);
}

static int kxfer_nl_stats_get_dumpit(struct sk_buff *skb,
				     struct netlink_callback *cb)
{
	return kxfer_nl_sess_dumpit(skb, cb, KXFER_CMD_STATS_GET,
				    &kxfer_nl_stats_ops);
}

/* ---------------------------------------------------------------------- */
/* Keys                                                                    */
/* ---------------------------------------------------------------------- */

/*
 * The secret of a request, once copied into the key: wipe the request's
 * own copy, so that nothing of it outlives the call in the socket buffer
 * (and an error's echo of the request carries zeros).
 */
static void kxfer_nl_wipe_secret(struct genl_info *info)
{
	struct nlattr *nla = info->attrs[KXFER_A_KEY_SECRET];

	if (nla)
		memzero_explicit(nla_data(nla), nla_len(nla));
}

static int kxfer_nl_key_new_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *secret = info->attrs[KXFER_A_KEY_SECRET];
	const char *name, *peer = "";
	int ret;

	name = kxfer_nl_name(info, KXFER_A_KEY_NAME, info->extack);
	if (IS_ERR(name)) {
		ret = PTR_ERR(name);
		goto out;
	}
	if (info->attrs[KXFER_A_KEY_PEER]) {
		peer = kxfer_nl_name(info, KXFER_A_KEY_PEER, info->extack);
		if (IS_ERR(peer)) {
			ret = PTR_ERR(peer);
			goto out;
		}
	}
	ret = -EINVAL;
	if (GENL_REQ_ATTR_CHECK(info, KXFER_A_KEY_SECRET))
		goto out;
	ret = kxfer_key_create(name, nla_data(secret), nla_len(secret), peer,
			       info->extack);
out:
	kxfer_nl_wipe_secret(info);
	return ret;
}

static int kxfer_nl_key_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *secret = info->attrs[KXFER_A_KEY_SECRET];
	const char *name;
	int ret;

	name = kxfer_nl_name(info, KXFER_A_KEY_NAME, info->extack);
	if (IS_ERR(name)) {
		ret = PTR_ERR(name);
		goto out;
	}
	ret = -EINVAL;
	if (GENL_REQ_ATTR_CHECK(info, KXFER_A_KEY_SECRET))
		goto out;
	ret = kxfer_key_set(name, nla_data(secret), nla_len(secret),
			    info->extack);
out:
	kxfer_nl_wipe_secret(info);
	return ret;
}

static int kxfer_nl_key_del_doit(struct sk_buff *skb, struct genl_info *info)
{
	const char *name = kxfer_nl_name(info, KXFER_A_KEY_NAME, info->extack);

	if (IS_ERR(name))
		return PTR_ERR(name);
	return kxfer_key_delete(name, info->extack);
}

/* What a reply says of a key: everything but its secret. */
struct kxfer_nl_key_view {
	char	name[KXFER_NAME_MAX];
	char	peer[KXFER_NAME_MAX];
	u32	gen;
};

/* The key called @name, or else the @idx-th; false if there is none. */
static bool kxfer_nl_key_view(const char *name, long idx,
			      struct kxfer_nl_key_view *v)
{
	struct kxfer_key *k;
	bool found = false;

	mutex_lock(&kxfer_key_mutex);
	list_for_each_entry(k, &kxfer_keys, k_node) {
		if (name ? strcmp(k->k_name, name) : idx--)
			continue;
		strscpy(v->name, k->k_name, sizeof(v->name));
		strscpy(v->peer, k->k_peer, sizeof(v->peer));
		v->gen = k->k_gen;
		found = true;
		break;
	}
	mutex_unlock(&kxfer_key_mutex);
	return found;
}

/*
 * One key: its name, the node it is bound to, its generation, and the
 * listeners and connecting peers that name it (each under its own list's
 * lock, never under kxfer_key_mutex, which nests inside both).
 */
static int kxfer_nl_fill_key(struct sk_buff *skb,
			     const struct kxfer_nl_key_view *v)
{
	struct kxfer_listener *l;
	struct kxfer_session *s;
	struct nlattr *nest;
	int ret = 0;

	if (nla_put_string(skb, KXFER_A_KEY_NAME, v->name) ||
	    (v->peer[0] && nla_put_string(skb, KXFER_A_KEY_PEER, v->peer)) ||
	    nla_put_u32(skb, KXFER_A_KEY_GEN, v->gen))
		return -EMSGSIZE;

	mutex_lock(&kxfer_listen_mutex);
	list_for_each_entry(l, &kxfer_listeners, l_node) {
		if (!l->l_key || strcmp(l->l_key->k_name, v->name))
			continue;
		nest = nla_nest_start(skb, KXFER_A_KEY_LISTENER);
		if (!nest || kxfer_nl_put_sockaddr(skb, KXFER_A_LISTEN_ADDR,
						   KXFER_A_LISTEN_PORT,
						   &l->l_addr)) {
			ret = -EMSGSIZE;
			break;
		}
		nla_nest_end(skb, nest);
	}
	mutex_unlock(&kxfer_listen_mutex);
	if (ret)
		return ret;

	mutex_lock(&kxfer_sess_mutex);
	list_for_each_entry(s, &kxfer_sessions, s_node) {
		if (s->s_role != KXFER_PEER_CONNECTOR || !s->s_auth.sa_key ||
		    strcmp(s->s_auth.sa_key->k_name, v->name) ||
		    kxfer_nl_other_rail(s))
			continue;
		if (nla_put_string(skb, KXFER_A_KEY_USER, s->s_name)) {
			ret = -EMSGSIZE;
			break;
		}
	}
	mutex_unlock(&kxfer_sess_mutex);
	return ret;
}

static int kxfer_nl_key_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct kxfer_nl_key_view v;
	struct sk_buff *msg;
	const char *name;
	void *hdr;

	name = kxfer_nl_name(info, KXFER_A_KEY_NAME, info->extack);
	if (IS_ERR(name))
		return PTR_ERR(name);
	if (!kxfer_nl_key_view(name, 0, &v)) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[KXFER_A_KEY_NAME],
				    "no such key");
		return -ENOENT;
	}
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &kxfer_genl_family, 0,
				KXFER_CMD_KEY_GET);
	if (!hdr || kxfer_nl_fill_key(msg, &v)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}

static int kxfer_nl_key_get_dumpit(struct sk_buff *skb,
				   struct netlink_callback *cb)
{
	struct kxfer_nl_key_view v;
	void *hdr;

	while (kxfer_nl_key_view(NULL, cb->args[0], &v)) {
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				  cb->nlh->nlmsg_seq, &kxfer_genl_family,
				  NLM_F_MULTI, KXFER_CMD_KEY_GET);
		if (!hdr)
			break;
		if (kxfer_nl_fill_key(skb, &v)) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
		cb->args[0]++;
	}
	return skb->len;
}

/* ---------------------------------------------------------------------- */
/* The policy of sessions on demand                                        */
/* ---------------------------------------------------------------------- */

/* A rule's prefix, which must have no bit set past its length, and port. */
static int kxfer_nl_connect_key(struct genl_info *info, struct kxfer_prefix *p,
				u16 *port)
{
	const struct nlattr *nest = info->attrs[KXFER_A_CONNECT_PREFIX];
	struct nlattr *tb[KXFER_A_PREFIX_MAX + 1];
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, KXFER_A_CONNECT_PREFIX))
		return -EINVAL;
	ret = kxfer_nl_prefix(nest, p, info->extack);
	if (ret)
		return ret;
	/* Parsed once already: cannot fail */
	if (nla_parse_nested(tb, KXFER_A_PREFIX_MAX, nest, kxfer_prefix_policy,
			     NULL))
		return -EINVAL;
	if (memcmp(nla_data(tb[KXFER_A_PREFIX_ADDR]), p->p_addr,
		   nla_len(tb[KXFER_A_PREFIX_ADDR]))) {
		NL_SET_ERR_MSG_ATTR(info->extack, nest,
				    "prefix has address bits set past its length");
		return -EINVAL;
	}
	*port = info->attrs[KXFER_A_CONNECT_PORT] ?
		nla_get_u16(info->attrs[KXFER_A_CONNECT_PORT]) : KXFER_PORT;
	return 0;
}

static int kxfer_nl_connect_new_doit(struct sk_buff *skb,
				     struct genl_info *info)
{
	struct kxfer_connect_rule r = {};
	struct nlattr **tb = info->attrs;
	int ret;

	ret = kxfer_nl_connect_key(info, &r.cr_prefix, &r.cr_port);
	if (ret)
		return ret;
	r.cr_qps = tb[KXFER_A_CONNECT_QPS] ?
		   nla_get_u32(tb[KXFER_A_CONNECT_QPS]) : 1;
	r.cr_idle_s = tb[KXFER_A_CONNECT_IDLE] ?
		      nla_get_u32(tb[KXFER_A_CONNECT_IDLE]) :
		      KXFER_CONNECT_IDLE_DEFAULT;
	r.cr_key = kxfer_nl_key(info, KXFER_A_CONNECT_KEY);
	if (IS_ERR(r.cr_key))
		return PTR_ERR(r.cr_key);
	return kxfer_connect_rule_add(&r, info->extack);
}

static int kxfer_nl_connect_del_doit(struct sk_buff *skb,
				     struct genl_info *info)
{
	struct kxfer_prefix p;
	u16 port;
	int ret;

	ret = kxfer_nl_connect_key(info, &p, &port);
	return ret ?: kxfer_connect_rule_del(&p, port, info->extack);
}

static int kxfer_nl_fill_connect(struct sk_buff *skb,
				 const struct kxfer_connect_rule *r)
{
	if (kxfer_nl_put_prefix(skb, KXFER_A_CONNECT_PREFIX, &r->cr_prefix) ||
	    nla_put_u16(skb, KXFER_A_CONNECT_PORT, r->cr_port) ||
	    (r->cr_key &&
	     nla_put_string(skb, KXFER_A_CONNECT_KEY, r->cr_key->k_name)) ||
	    nla_put_u32(skb, KXFER_A_CONNECT_QPS, r->cr_qps) ||
	    nla_put_u32(skb, KXFER_A_CONNECT_IDLE, r->cr_idle_s) ||
	    nla_put_u32(skb, KXFER_A_CONNECT_MADE, atomic_read(&r->cr_made)) ||
	    nla_put_u32(skb, KXFER_A_CONNECT_REFUSED,
			atomic_read(&r->cr_refused)))
		return -EMSGSIZE;
	return 0;
}

static int kxfer_nl_connect_get_dumpit(struct sk_buff *skb,
				       struct netlink_callback *cb)
{
	struct kxfer_connect_rule *r;
	long idx = 0;
	void *hdr;

	mutex_lock(&kxfer_connect_mutex);
	list_for_each_entry(r, &kxfer_connect_rules, cr_node) {
		if (idx++ < cb->args[0])
			continue;
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				  cb->nlh->nlmsg_seq, &kxfer_genl_family,
				  NLM_F_MULTI, KXFER_CMD_CONNECT_GET);
		if (!hdr)
			break;
		if (kxfer_nl_fill_connect(skb, r)) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
		cb->args[0] = idx;
	}
	mutex_unlock(&kxfer_connect_mutex);
	return skb->len;
}

/* ---------------------------------------------------------------------- */
/* Family                                                                  */
/* ---------------------------------------------------------------------- */

static const struct genl_ops kxfer_nl_ops[] = {
	{
		.cmd	= KXFER_CMD_DEV_GET,
		.doit	= kxfer_nl_dev_get_doit,
		.dumpit	= kxfer_nl_dev_get_dumpit,
		.policy	= kxfer_dev_get_policy,
		.maxattr = KXFER_A_DEV_MAX,
	},
	{
		.cmd	= KXFER_CMD_POOL_NEW,
		.doit	= kxfer_nl_pool_new_doit,
		.policy	= kxfer_pool_new_policy,
		.maxattr = KXFER_A_POOL_MAX,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= KXFER_CMD_POOL_DEL,
		.doit	= kxfer_nl_pool_del_doit,
		.policy	= kxfer_pool_name_policy,
		.maxattr = KXFER_A_POOL_MAX,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= KXFER_CMD_POOL_GET,
		.doit	= kxfer_nl_pool_get_doit,
		.dumpit	= kxfer_nl_pool_get_dumpit,
		.policy	= kxfer_pool_name_policy,
		.maxattr = KXFER_A_POOL_MAX,
	},
	{
		.cmd	= KXFER_CMD_EXPORT_NEW,
		.doit	= kxfer_nl_export_new_doit,
		.policy	= kxfer_export_new_policy,
		.maxattr = KXFER_A_EXPORT_MAX,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= KXFER_CMD_EXPORT_DEL,
		.doit	= kxfer_nl_export_del_doit,
		.policy	= kxfer_export_name_policy,
		.maxattr = KXFER_A_EXPORT_MAX,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= KXFER_CMD_EXPORT_GET,
		.doit	= kxfer_nl_export_get_doit,
		.dumpit	= kxfer_nl_export_get_dumpit,
		.policy	= kxfer_export_name_policy,
		.maxattr = KXFER_A_EXPORT_MAX,
	},
	{
		.cmd	= KXFER_CMD_LISTEN_NEW,
		.doit	= kxfer_nl_listen_new_doit,
		.policy	= kxfer_listen_policy,
		.maxattr = KXFER_A_LISTEN_MAX,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= KXFER_CMD_LISTEN_DEL,
		.doit	= kxfer_nl_listen_del_doit,
		.policy	= kxfer_listen_policy,
		.maxattr = KXFER_A_LISTEN_MAX,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= KXFER_CMD_LISTEN_GET,
		.dumpit	= kxfer_nl_listen_get_dumpit,
		.policy	= kxfer_listen_policy,
		.maxattr = KXFER_A_LISTEN_MAX,
	},
	{
		.cmd	= KXFER_CMD_PEER_NEW,
		.doit	= kxfer_nl_peer_new_doit,
		.policy	= kxfer_peer_new_policy,
		.maxattr = KXFER_A_PEER_MAX,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= KXFER_CMD_PEER_DEL,
		.doit	= kxfer_nl_peer_del_doit,
		.policy	= kxfer_peer_name_policy,
		.maxattr = KXFER_A_PEER_MAX,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= KXFER_CMD_PEER_GET,
		.doit	= kxfer_nl_peer_get_doit,
		.dumpit	= kxfer_nl_peer_get_dumpit,
		.policy	= kxfer_peer_name_policy,
		.maxattr = KXFER_A_PEER_MAX,
	},
	{
		.cmd	= KXFER_CMD_STATS_GET,
		.doit	= kxfer_nl_stats_get_doit,
		.dumpit	= kxfer_nl_stats_get_dumpit,
		.policy	= kxfer_peer_name_policy,
		.maxattr = KXFER_A_PEER_MAX,
	},
	{
		.cmd	= KXFER_CMD_KEY_NEW,
		.doit	= kxfer_nl_key_new_doit,
		.policy	= kxfer_key_new_policy,
		.maxattr = KXFER_A_KEY_MAX,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= KXFER_CMD_KEY_SET,
		.doit	= kxfer_nl_key_set_doit,
		.policy	= kxfer_key_set_policy,
		.maxattr = KXFER_A_KEY_MAX,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= KXFER_CMD_KEY_DEL,
		.doit	= kxfer_nl_key_del_doit,
		.policy	= kxfer_key_name_policy,
		.maxattr = KXFER_A_KEY_MAX,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= KXFER_CMD_KEY_GET,
		.doit	= kxfer_nl_key_get_doit,
		.dumpit	= kxfer_nl_key_get_dumpit,
		.policy	= kxfer_key_name_policy,
		.maxattr = KXFER_A_KEY_MAX,
	},
	{
		.cmd	= KXFER_CMD_CONNECT_NEW,
		.doit	= kxfer_nl_connect_new_doit,
		.policy	= kxfer_connect_policy,
		.maxattr = KXFER_A_CONNECT_MAX,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= KXFER_CMD_CONNECT_DEL,
		.doit	= kxfer_nl_connect_del_doit,
		.policy	= kxfer_connect_policy,
		.maxattr = KXFER_A_CONNECT_MAX,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= KXFER_CMD_CONNECT_GET,
		.dumpit	= kxfer_nl_connect_get_dumpit,
		.policy	= kxfer_connect_policy,
		.maxattr = KXFER_A_CONNECT_MAX,
	},
};

static const struct genl_multicast_group kxfer_nl_mcgrps[] = {
	{ .name = KXFER_MCGRP_MONITOR, },
};

static struct genl_family kxfer_genl_family __ro_after_init = {
	.name		= KXFER_GENL_NAME,
	.version	= KXFER_GENL_VERSION,
	.module		= THIS_MODULE,
	.ops		= kxfer_nl_ops,
	.n_ops		= ARRAY_SIZE(kxfer_nl_ops),
	.mcgrps		= kxfer_nl_mcgrps,
	.n_mcgrps	= ARRAY_SIZE(kxfer_nl_mcgrps),
	.parallel_ops	= true,
};

/*
 * Announce an object to the monitor group.  @fill writes the object's
 * attributes; a deletion carries only the name.
 */
typedef int (*kxfer_nl_fill_t)(struct sk_buff *skb, void *obj, bool full);

static void kxfer_nl_notify(u8 cmd, kxfer_nl_fill_t fill, void *obj, bool full)
{
	struct sk_buff *msg;
	void *hdr;

	down_read(&kxfer_nl_rwsem);
	if (!kxfer_nl_ready ||
	    !genl_has_listeners(&kxfer_genl_family, &init_net, 0))
		goto out_unlock;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		goto out_unlock;
	hdr = genlmsg_put(msg, 0, 0, &kxfer_genl_family, 0, cmd);
	if (!hdr || fill(msg, obj, full)) {
		nlmsg_free(msg);
		goto out_unlock;
	}
	genlmsg_end(msg, hdr);
	genlmsg_multicast(&kxfer_genl_family, msg, 0, 0, GFP_KERNEL);
out_unlock:
	up_read(&kxfer_nl_rwsem);
}

static int kxfer_nl_fill_dev_ntf(struct sk_buff *skb, void *obj, bool full)
{
	return kxfer_nl_fill_dev(skb, ((struct kxfer_device *)obj)->kd_ibdev,
				 full);
}

static int kxfer_nl_fill_pool_ntf(struct sk_buff *skb, void *obj, bool full)
{
	return kxfer_nl_fill_pool(skb, obj, &init_user_ns, full);
}

static int kxfer_nl_fill_export_ntf(struct sk_buff *skb, void *obj, bool full)
{
	return kxfer_nl_fill_export(skb, obj, full);
}

/**
 * kxfer_nl_notify_dev - announce a device added or being removed
 * @kd: the device; its ib_device is still registered
 * @add: true for an addition
 *
 * May sleep.
 */
void kxfer_nl_notify_dev(struct kxfer_device *kd, bool add)
{
	kxfer_nl_notify(add ? KXFER_CMD_DEV_ADD_NTF : KXFER_CMD_DEV_DEL_NTF,
			kxfer_nl_fill_dev_ntf, kd, add);
}

/**
 * kxfer_nl_notify_pool - announce a pool created or deleted
 * @pool: the pool
 * @add: true for a creation
 *
 * Caller holds kxfer_obj_mutex.  May sleep.
 */
void kxfer_nl_notify_pool(struct kxfer_pool *pool, bool add)
{
	kxfer_nl_notify(add ? KXFER_CMD_POOL_ADD_NTF : KXFER_CMD_POOL_DEL_NTF,
			kxfer_nl_fill_pool_ntf, pool, add);
}

/**
 * kxfer_nl_notify_export - announce an export created or deleted
 * @exp: the export
 * @add: true for a creation
 *
 * Caller holds kxfer_obj_mutex.  May sleep.
 */
void kxfer_nl_notify_export(struct kxfer_export *exp, bool add)
{
	kxfer_nl_notify(add ? KXFER_CMD_EXPORT_ADD_NTF :
			KXFER_CMD_EXPORT_DEL_NTF,
			kxfer_nl_fill_export_ntf, exp, add);
}

static int kxfer_nl_fill_peer_ntf(struct sk_buff *skb, void *obj, bool full)
{
	return kxfer_nl_fill_peer(skb, obj, KXFER_NL_PEER_STATE);
}

/**
 * kxfer_nl_notify_peer - announce a session's new state, or its end
 * @s: the session
 * @gone: true when the session is being freed
 *
 * Caller holds the session's s_mutex, or the session is stopped.
 * May sleep.
 */
void kxfer_nl_notify_peer(struct kxfer_session *s, bool gone)
{
	kxfer_nl_notify(gone ? KXFER_CMD_PEER_DEL_NTF :
			KXFER_CMD_PEER_STATE_NTF, kxfer_nl_fill_peer_ntf, s,
			false);
}

/**
 * kxfer_nl_register - register the "kxfer" family
 *
 * Return: 0 or a negative errno from genl_register_family().
 */
int kxfer_nl_register(void)
{
	int ret;

	/*
	 * Not under kxfer_nl_rwsem: genl_register_family() takes cb_lock,
	 * under which the doit handlers take kxfer_obj_mutex, under which
	 * announcements take kxfer_nl_rwsem (lockdep's cycle).  Until the
	 * family is ready, announcements are skipped: nobody listens yet.
	 */
	ret = genl_register_family(&kxfer_genl_family);
	if (ret)
		return ret;
	down_write(&kxfer_nl_rwsem);
	kxfer_nl_ready = true;
	up_write(&kxfer_nl_rwsem);
	return 0;
}

/**
 * kxfer_nl_unregister - unregister the family; no announcement follows
 */
void kxfer_nl_unregister(void)
{
	down_write(&kxfer_nl_rwsem);
	kxfer_nl_ready = false;
	up_write(&kxfer_nl_rwsem);
	genl_unregister_family(&kxfer_genl_family);
}
